// fuzz-target: webhook_response
// Fuzzes what webhook delivery reads from a receiver, TipsWebhooks.HTTPResponseHead, and the endpoint URL check
// (WebhookURL.parse). The input is split into chunks whose sizes come from its first byte: the state fed in chunks
// must equal the state fed at once; once complete or malformed it never changes; a complete head's status is 100-599
// and the head is at most HTTPResponseHead.limit bytes. The input as text must parse as a URL only if it is https or
// loopback http.
import TipsWebhooks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  let step = Int(bytes.first ?? 1) % 17 + 1
  var whole = HTTPResponseHead()
  let once = whole.consume(bytes)
  var chunked = HTTPResponseHead()
  var settled: HTTPResponseHead.State?
  var index = 0
  while index < bytes.count {
    let state = chunked.consume(bytes[index..<min(bytes.count, index + step)])
    if let settled { fuzzCheck(state == settled, "a settled state changed: \(settled) then \(state)") }
    if state != .partial && settled == nil { settled = state }
    index += step
  }
  fuzzCheck(chunked.state == once, "chunks of \(step) answered \(chunked.state), all at once \(once)")
  if case .complete(let status) = once { fuzzCheck((100...599).contains(status), "status \(status)") }
  if case .success(let url) = WebhookURL.parse(String(decoding: bytes, as: UTF8.self)) {
    fuzzCheck(url.scheme == .https || url.isLoopback, "accepted \(url.text)")
  }
  return 0
}
