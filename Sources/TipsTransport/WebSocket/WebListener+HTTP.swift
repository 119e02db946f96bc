import CLibUV
import CLibWebSockets
import Glibc

// Plain HTTP answers (`/healthz`, `/metrics`, the inspector): written through libwebsockets with an HTTP/1.1 status
// line, or raw when lws would write its own HTTP/1.0 one (libwebsockets-notes: strict clients refuse it).

extension WebListener {
  /// A plain HTTP request: Host and Origin checks, then ``onRequest``.
  func answerHTTP(_ wsi: OpaquePointer, path: String) -> Int32 {
    let method =
      lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0
      ? "GET"
      : lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0 ? "POST" : "OTHER"
    var response: HTTPResponse
    if let listener = listenAddress(of: wsi) {
      let host = header(wsi, WSI_TOKEN_HOST)
      let policy = configuration.policy
      let hosted = authenticate != nil
      switch (
        hosted ? .allow : policy.checkHost(host, listener: listener),
        hosted ? .allow : policy.checkOrigin(header(wsi, WSI_TOKEN_ORIGIN), host: host, listener: listener)
      ) {
      case (.refuse(let status, let reason), _), (.allow, .refuse(let status, let reason)):
        log(warning: true, "refused an HTTP request", [("status", String(status)), ("reason", reason)])
        response = .error(status, reason)
      case (.allow, .allow):
        let authorized =
          policy.checkToken(authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION), protocols: nil) == .allow
        let query = path.firstIndex(of: "?").map { String(path[..<$0]) } ?? path
        response =
          onRequest?(HTTPRequest(method: method, path: query, authorized: authorized, host: host))
          ?? .error(404, "not found")
      }
    } else {
      response = .error(500, "unknown listener")
    }
    return writeHTTP(wsi, response)
  }

  /// Writes a response through lws's HTTP helpers (correct status line once the request is parsed).
  func writeHTTP(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Int32 {
    let pre = tipsd_lws_pre()
    var buffer = [UInt8](
      repeating: 0, count: pre + 2048 + response.headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 })
    let ok = buffer.withUnsafeMutableBufferPointer { storage -> Bool in
      let start = storage.baseAddress! + pre
      var p: UnsafeMutablePointer<UInt8>? = start
      let end = storage.baseAddress! + storage.count - 1
      let contentType = strdup(response.contentType)!
      defer { free(contentType) }
      if lws_add_http_common_headers(
        wsi, UInt32(response.status), UnsafePointer(contentType), lws_filepos_t(response.body.count), &p, end) != 0
      {
        return false
      }
      for (name, value) in response.headers {
        let headerName = strdup(name + ":")!
        defer { free(headerName) }
        let failed = Array(value.utf8).withUnsafeBufferPointer { bytes in
          lws_add_http_header_by_name(
            wsi, UnsafeRawPointer(headerName).assumingMemoryBound(to: UInt8.self), bytes.baseAddress,
            Int32(bytes.count),
            &p, end) != 0
        }
        if failed { return false }
      }
      guard lws_finalize_write_http_header(wsi, start, &p, end) == 0 else { return false }
      return true
    }
    guard ok else { return -1 }
    if !response.body.isEmpty {
      var body = [UInt8](repeating: 0, count: pre) + response.body
      let written = body.withUnsafeMutableBufferPointer {
        lws_write(wsi, $0.baseAddress! + pre, response.body.count, LWS_WRITE_HTTP_FINAL)
      }
      guard written >= 0 else { return -1 }
    }
    return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
  }

  /// An HTTP/1.1 response written in full by hand (for refusals before an upgrade).
  static func rawResponse(_ response: HTTPResponse) -> [UInt8] {
    var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
    head += "Content-Type: \(response.contentType)\r\nContent-Length: \(response.body.count)\r\n"
    for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    return Array(head.utf8) + response.body
  }

  func writeRaw(_ wsi: OpaquePointer, _ bytes: [UInt8]) {
    let pre = tipsd_lws_pre()
    var buffer = [UInt8](repeating: 0, count: pre) + bytes
    _ = buffer.withUnsafeMutableBufferPointer {
      lws_write(wsi, $0.baseAddress! + pre, bytes.count, LWS_WRITE_HTTP_HEADERS)
    }
  }

  static func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 429: "Too Many Requests"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status"
    }
  }
}
