// What every suite measures with: the stopwatch, and the windowed pipelining loop of the serve suites.
import TipsSystem

/// Seconds on the monotonic clock.
func monotonic() -> Double { System.monotonicSeconds() }

/// Requests per second of a pipelined run: up to `window` requests in flight, sent `batch` at a time. `request(n)`
/// is the n-th request's bytes (from 1), `send` writes bytes, `receive` waits for at least one reply and returns how
/// many came. tipsd's Unix-socket and WebSocket runs and Redis's share it, so they are driven alike.
func pipelinedRate(
  requests: Int, window: Int, batch: Int, request: (Int) -> [UInt8], send: ([UInt8]) -> Void, receive: () -> Int
) -> Double {
  let start = monotonic()
  var sent = 0
  var received = 0
  while received < requests {
    while sent < requests && sent - received < window {
      var chunk: [UInt8] = []
      for _ in 0..<min(batch, requests - sent, window - (sent - received)) {
        chunk += request(sent + 1)
        sent += 1
      }
      send(chunk)
    }
    received += receive()
  }
  return Double(requests) / (monotonic() - start)
}
