public import TipsJSON

/// Operations a device pushes through a hosted node (`sync/push`) come from whoever holds a token for the account:
/// before a node stores and merges one, it must decode (``SyncOperation/init(device:seq:payload:)``) and stay within
/// bounds the merge can take — no clock a node would overflow following, no count a sum would overflow, no number
/// that is not finite — and be of a kind a device sends.
extension SyncOperation {
  /// The largest cumulative count (donations, displays) a device may claim.
  public static let maxUntrustedCount: Int64 = 1_000_000_000
  /// How far ahead of the node's clock an operation's HLC may be, in seconds (a device's clock may be wrong, not a
  /// year wrong).
  public static let maxUntrustedSkew: Double = 366 * 86_400

  /// Decodes and checks an operation a device pushed, or says precisely what is wrong with it. `now`: the node's
  /// wall clock, in seconds since the epoch. The operation's canonical payload (``payload``) is what is stored.
  public static func untrusted(device: String, seq: Int64, op: JSONObject, now: Double) -> Result<
    SyncOperation, UntrustedOperationError
  > {
    func refuse(_ problem: String) -> Result<SyncOperation, UntrustedOperationError> {
      .failure(UntrustedOperationError(problem: problem))
    }
    let kinds = ["reset", "donation", "display", "invalidate", "resetEligibility", "parameter"]
    guard let hlc = op["hlc"]?.intValue, hlc >= 0 else { return refuse("hlc must be an integer of at least 0") }
    guard let epoch = op["epoch"]?.intValue, epoch >= 0 else {
      return refuse("epoch must be an integer of at least 0")
    }
    let limit = HLC(rawValue: Int64((max(0, now) + maxUntrustedSkew) * 1000) << 16)
    guard HLC(rawValue: hlc) <= limit, HLC(rawValue: epoch) <= limit else {
      return refuse(
        "hlc and epoch may not be more than \(Int(maxUntrustedSkew / 86_400)) days ahead of the node's clock")
    }
    guard epoch <= hlc else { return refuse("epoch must not be after hlc") }
    guard let kind = op["kind"]?.stringValue else { return refuse("kind must be a string") }
    guard kinds.contains(kind) else {
      let hostedOnly = ["variant", "cooldown", "exposure"].contains(kind)
      return refuse(
        hostedOnly
          ? "kind \"\(kind)\" is a hosted node's own; a device does not send it"
          : "kind \"\(kind)\" is not an operation (expected \(kinds.joined(separator: ", ")))")
    }
    guard let operation = SyncOperation(device: device, seq: seq, payload: JSONValue.object(op).jsonString) else {
      return refuse("a \(kind) operation's members are missing or of the wrong type")
    }
    func finite(_ values: Double?...) -> Bool { values.allSatisfy { $0.map(\.isFinite) ?? true } }
    func count(_ value: Int) -> Bool { value >= 0 && Int64(value) <= maxUntrustedCount }
    switch operation.body {
    case .reset, .resetEligibility, .parameter, .variant, .cooldown, .exposure:
      break
    case .donation(_, let at, _, let lifetime):
      guard finite(at) else { return refuse("at must be a finite number") }
      guard count(lifetime), lifetime >= 1 else {
        return refuse("lifetime must be from 1 to \(maxUntrustedCount)")
      }
    case .display(_, let generation, let displays, let duration, let first, let last):
      guard generation.rawValue >= 0, generation <= limit else { return refuse("generation is out of range") }
      guard count(displays) else { return refuse("count must be from 0 to \(maxUntrustedCount)") }
      guard finite(duration, first, last), duration >= 0, duration <= Double(maxUntrustedCount) else {
        return refuse("duration, first and last must be finite numbers (duration at least 0)")
      }
    case .invalidate(_, _, let at):
      guard finite(at) else { return refuse("at must be a finite number") }
    }
    return .success(operation)
  }
}

/// Why a device's operation was refused.
public struct UntrustedOperationError: Error, Sendable, Equatable {
  public var problem: String
}
