import TipsFraming
import TipsJSON
public import TipsLogging
import TipsSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a ``LanguageServer`` on a pair of descriptors (stdin and stdout for `tipsd lsp`) with the LSP base
/// protocol's `Content-Length` framing: blocking reads (one client, nothing else to do meanwhile), every message
/// handled in order, diagnostics published once the input read so far is handled. Logs go to `logger` (stderr), never
/// to the output, which belongs to the protocol.
public enum LanguageServerRunner {
  /// Serves until `exit` or the end of input; returns the exit status: 0 after `shutdown` then `exit` (or the end of
  /// input after `shutdown`), 1 otherwise — `exit` without `shutdown`, a vanished client, a framing error.
  public static func run(_ server: LanguageServer, input: Int32 = 0, output: Int32 = 1, logger: Logger)
    -> Int32
  {
    var framer = Framer(maxMessageSize: 64 << 20)
    var buffer = [UInt8](repeating: 0, count: 65_536)
    func send(_ messages: [JSONValue]) -> Bool {
      for message in messages {
        do {
          // Content-Length, as LSP has it (a client writing newline-delimited JSON gets that back).
          let framed = Framer.encode(message.serialized(), as: framer.framing ?? .contentLength)
          try System.writeAll(output, framed, what: "write to the client")
        } catch {
          logger.error("tipsd lsp: \(error)")
          return false
        }
      }
      return true
    }
    while true {
      let read = buffer.withUnsafeMutableBytes { raw in
        Result { () throws(SystemError) in try System.read(input, into: raw, what: "read from the client") }
      }
      let count: Int
      switch read {
      case .success(let n): count = n
      case .failure(let error):
        logger.error("tipsd lsp: \(error)")
        return 1
      }
      guard count > 0 else {
        logger.info("tipsd lsp: the client closed the input\(server.lifecycle == .shutDown ? "" : " without shutdown")")
        return server.lifecycle == .shutDown ? 0 : 1
      }
      buffer.withUnsafeBytes { framer.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
      while let event = framer.next() {
        switch event {
        case .message(let bytes):
          guard send(server.handle(bytes: bytes)) else { return 1 }
          if let code = server.exitCode { return code }
        case .error(let error):
          logger.error("tipsd lsp: framing error: \(error)")
          return 1
        }
      }
      guard send(server.flush()) else { return 1 }
    }
  }
}
