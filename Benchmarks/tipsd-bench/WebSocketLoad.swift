import Foundation

/// A minimal blocking WebSocket client for the load generator: the upgrade, masked text frames out, and a count of
/// complete frames in (the daemon's replies), without parsing their JSON — the client's own cost stays out of the
/// figures, as `readRawLines` does for the Unix socket.
final class WebSocketLoad {
  let fd: Int32
  private var buffer = [UInt8](repeating: 0, count: 1 << 16)
  private var pending: [UInt8] = []
  /// Bytes of the current incoming frame still to skip.
  private var skipping = 0
  /// Whether the frame being skipped is a reply (counted once it is complete).
  private var countsWhenComplete = false

  init(port: Int, token: String) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { throw BenchError("connect 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
    let request =
      "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
      + "Sec-WebSocket-Protocol: tipsd.v1, tipsd.token.\(token)\r\n\r\n"
    send(Array(request.utf8))
    var head: [UInt8] = []
    while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
      var byte: UInt8 = 0
      guard read(fd, &byte, 1) == 1 else { throw BenchError("the upgrade was refused") }
      head.append(byte)
    }
    guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
      throw BenchError("the upgrade was refused: \(String(decoding: head.prefix(60), as: UTF8.self))")
    }
  }

  deinit { close(fd) }

  func send(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes {
        Foundation.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      precondition(n > 0, "send failed")
      offset += n
    }
  }

  /// One masked text frame holding `payload`. The masking key is all zeros — legal (a client chooses its key; the
  /// server cannot tell), and it keeps the load generator's own cost comparable to the Unix socket's raw lines, so
  /// the figures measure the daemon: the daemon still unmasks every byte.
  static func frame(_ payload: [UInt8]) -> [UInt8] {
    var frame: [UInt8] = [0x81]
    frame.reserveCapacity(payload.count + 8)
    if payload.count < 126 {
      frame.append(0x80 | UInt8(payload.count))
    } else {
      frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    }
    frame += [0, 0, 0, 0]
    frame += payload
    return frame
  }

  /// Reads until at least `count` more complete frames have arrived; returns how many.
  func readFrames(atLeast count: Int) -> Int {
    var got = 0
    while got < count {
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      precondition(n > 0, "connection closed")
      pending += buffer[0..<n]
      var i = 0
      while true {
        if skipping > 0 {
          let take = min(skipping, pending.count - i)
          skipping -= take
          i += take
          if skipping > 0 { break }
        }
        if countsWhenComplete {
          countsWhenComplete = false
          got += 1
        }
        guard pending.count - i >= 2 else { break }
        var length = Int(pending[i + 1] & 0x7F)
        var header = 2
        if length == 126 {
          guard pending.count - i >= 4 else { break }
          length = Int(pending[i + 2]) << 8 | Int(pending[i + 3])
          header = 4
        } else if length == 127 {
          guard pending.count - i >= 10 else { break }
          length = (0..<8).reduce(0) { $0 << 8 | Int(pending[i + 2 + $1]) }
          header = 10
        }
        countsWhenComplete = pending[i] & 0x80 != 0 && pending[i] & 0x0F != 0x09 && pending[i] & 0x0F != 0x0A
        i += header
        skipping = length
        if skipping == 0 && countsWhenComplete {
          countsWhenComplete = false
          got += 1
        }
      }
      pending.removeFirst(i)
    }
    return got
  }
}
