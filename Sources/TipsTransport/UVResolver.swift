// Host name resolution off the loop thread: uv_getaddrinfo runs getaddrinfo on libuv's thread pool.
import CLibUV
import Glibc

/// One `uv_getaddrinfo` request. Ownership: the request is allocated here and its `data` holds a +1 reference to the
/// box carrying the completion; both are released in the callback, which libuv always calls (with `UV_ECANCELED` when
/// the loop closes first).
final class UVResolution {
  private let completion: (Result<String, TransportError>) -> Void
  private let host: String

  private init(host: String, completion: @escaping (Result<String, TransportError>) -> Void) {
    self.host = host
    self.completion = completion
  }

  static func start(
    loop: UVLoop, host: String, completion: @escaping (Result<String, TransportError>) -> Void
  ) {
    let request = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
    request.initialize(to: uv_getaddrinfo_t())
    let box = UVResolution(host: host, completion: completion)
    request.pointee.data = Unmanaged.passRetained(box).toOpaque()
    // Any socket type: the first address is all that is used. (Naming SOCK_STREAM here would make the whole-module
    // build attribute glibc's socket-type enum to CLibUV's import and hide it from files that import only Glibc.)
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    let rc = uv_getaddrinfo(
      loop.uvLoop, request,
      { request, status, result in
        guard let request, let data = request.pointee.data else { return }
        let box = Unmanaged<UVResolution>.fromOpaque(data).takeRetainedValue()
        request.deallocate()
        defer { if let result { uv_freeaddrinfo(result) } }
        guard status == 0, let result else {
          box.completion(
            .failure(
              TransportError(
                "cannot resolve \(box.host)",
                cause: UVError(code: status == 0 ? -EAI_NONAME : status, operation: "getaddrinfo"))))
          return
        }
        guard let address = numericAddress(result) else {
          box.completion(.failure(TransportError("cannot resolve \(box.host): no usable address")))
          return
        }
        box.completion(.success(address))
      }, host, nil, &hints)
    if rc < 0 {
      Unmanaged<UVResolution>.fromOpaque(request.pointee.data!).release()
      request.deallocate()
      completion(
        .failure(TransportError("cannot resolve \(host)", cause: UVError(code: rc, operation: "uv_getaddrinfo"))))
    }
  }
}

/// The first address of a getaddrinfo result, as numeric text (`192.0.2.1`, `2001:db8::1`).
func numericAddress(_ result: UnsafeMutablePointer<addrinfo>) -> String? {
  var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
  var entry: UnsafeMutablePointer<addrinfo>? = result
  while let current = entry {
    if getnameinfo(
      current.pointee.ai_addr, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
      == 0
    {
      return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    entry = current.pointee.ai_next
  }
  return nil
}
