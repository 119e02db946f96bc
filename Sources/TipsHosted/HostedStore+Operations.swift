public import TipsRecords
import TipsSync

// A hosted node's reads of an account's operations: its own catch-up (`pull`), a device's (`pullAsDevice`, for
// `sync/push` and `sync/pull`, #37), and their retention (`pruneOperations`).
extension HostedStore {
  /// One device's operations pushed through a node: stored under the device's id, idempotent by (device, seq).
  public struct DeviceOperations: Sendable {
    public var device: String
    public var operations: [PendingOperation]

    public init(device: String, operations: [PendingOperation]) {
      self.device = device
      self.operations = operations
    }
  }

  /// The operations of `account` after `cursor`, at most `limit`, in cursor order.
  public func pull(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[OperationRow], HostedError>) -> Void
  ) {
    reader.send([.prepared(Statement.pull, [account, String(cursor), String(limit)])]) { result in
      completion(
        result.flatMap { results in
          var operations: [OperationRow] = []
          for row in results.first?.rows ?? [] {
            guard row.count == 4, let cursor = row[0].flatMap({ Int64($0) }) else { continue }
            if cursor == -1 { return .failure(.behindRetention) }
            guard let device = row[1], let seq = row[2].flatMap({ Int64($0) }), let payload = row[3] else { continue }
            operations.append(OperationRow(cursor: cursor, device: device, seq: seq, payload: payload))
          }
          return .success(operations)
        })
    }
  }

  /// A device's pull (`tipsd.pull`): its cursor registered, then the operations of `account` after `cursor`, at most
  /// `limit`, or the snapshot when `cursor` is behind the operations kept. On the writer: it writes the cursor. A
  /// device new to the account past `maxDevices` fails with ``HostedError/deviceLimit`` unless the least recently seen
  /// one was silent longer than `deviceDays` (it is replaced).
  public func pullAsDevice(
    _ account: String, device: String, after cursor: Int64, limit: Int, maxDevices: Int, deviceDays: Double,
    completion: @escaping (Result<PulledOperations, HostedError>) -> Void
  ) {
    let parameters = [account, device, String(cursor), String(limit), String(maxDevices), "\(deviceDays)"]
    writer.send([.query(PGSchema.pullAsCappedDevice, parameters)]) { result in
      if case .failure(let error) = result, error.message.contains(PGSchema.deviceLimitError) {
        return completion(.failure(.deviceLimit))
      }
      completion(
        result.map { results in
          var operations: [OperationRow] = []
          for row in results.first?.rows ?? [] {
            guard row.count == 4, let cursor = row[0].flatMap({ Int64($0) }), let seq = row[2].flatMap({ Int64($0) }),
              let payload = row[3]
            else { continue }
            if seq == -1 { return .snapshot(state: payload, cursor: cursor) }
            guard let device = row[1] else { continue }
            operations.append(OperationRow(cursor: cursor, device: device, seq: seq, payload: payload))
          }
          return .rows(operations)
        })
    }
  }

  public func pruneOperations(
    of account: String, deviceDays: Double, keep: Int, limit: Int,
    completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    writer.send([.query(PGSchema.pruneOps, [account, "\(deviceDays)", String(limit), String(keep)])]) { result in
      completion(result.map { results in results.first?.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0 })
    }
  }
}
