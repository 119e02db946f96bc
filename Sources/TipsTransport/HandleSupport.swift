// Shared plumbing for objects that own libuv handles.
//
// Ownership model (house style):
//  * every handle is allocated with `UnsafeMutablePointer<uv_xxx_t>.allocate(capacity: 1)`;
//  * `handle.pointee.data` holds `Unmanaged.passRetained(owner).toOpaque()`, so the Swift
//    owner lives at least as long as libuv may call back into it;
//  * callbacks are non-capturing `@convention(c)` closures that recover the owner from `data`;
//  * the retain is released and the memory freed only in the close callback.
import CLibUV
import Synchronization

/// Every handle whose `data` holds one of our owners. A loop may also carry handles of a library sharing it
/// (libwebsockets on a foreign loop), whose `data` is theirs: `UVLoop.close()` asks only ours to close.
let ownedHandles = Mutex<Set<UInt>>([])

/// Whether `handle`'s `data` is one of our owners.
func isOwned(_ handle: UnsafeMutablePointer<uv_handle_t>) -> Bool {
  ownedHandles.withLock { $0.contains(UInt(bitPattern: handle)) }
}

/// An object that owns one or more libuv handles on an `UVLoop`.
/// `UVLoop.close()` finds every live handle with `uv_walk` and asks its owner to close.
protocol LoopHandleOwner: AnyObject {
  /// Close all handles of this owner (idempotent; may be called once per handle).
  func closeForLoopShutdown()
}

/// Reinterprets a concrete handle pointer (`uv_timer_t *`, ...) as the `uv_handle_t *` base.
@inline(__always)
func asHandle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
  UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_handle_t.self)
}

/// Reinterprets a concrete stream handle pointer (`uv_pipe_t *`, ...) as `uv_stream_t *`.
@inline(__always)
func asStream<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_stream_t> {
  UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_stream_t.self)
}

/// Recovers the (unretained) owner stored in a handle's `data` field.
@inline(__always)
func owner<T: AnyObject>(of handle: UnsafeMutablePointer<uv_handle_t>?, as _: T.Type) -> T? {
  guard let data = handle?.pointee.data else { return nil }
  return Unmanaged<T>.fromOpaque(data).takeUnretainedValue()
}

/// Stores a +1 reference to `object` in `handle.pointee.data` (released in the close callback).
@inline(__always)
func retainOwner(_ object: AnyObject, in handle: UnsafeMutablePointer<uv_handle_t>) {
  handle.pointee.data = Unmanaged.passRetained(object).toOpaque()
  _ = ownedHandles.withLock { $0.insert(UInt(bitPattern: handle)) }
}

/// Takes back the +1 reference stored by `retainOwner` (close callbacks only).
@inline(__always)
func releaseOwner<T: AnyObject>(of handle: UnsafeMutablePointer<uv_handle_t>, as _: T.Type) -> T? {
  guard let data = handle.pointee.data else { return nil }
  handle.pointee.data = nil
  _ = ownedHandles.withLock { $0.remove(UInt(bitPattern: handle)) }
  return Unmanaged<T>.fromOpaque(data).takeRetainedValue()
}

/// Whether a handle keeps the loop running (`uv_has_ref`); false once closed. Loop thread only.
func isReferenced(_ handle: UnsafeMutablePointer<uv_handle_t>, closed: Bool, on loop: UVLoop) -> Bool {
  loop.assertOnLoopThread()
  return !closed && uv_has_ref(handle) != 0
}

/// `uv_ref`/`uv_unref`, ignored once closed. Loop thread only.
func setReferenced(_ handle: UnsafeMutablePointer<uv_handle_t>, _ referenced: Bool, closed: Bool, on loop: UVLoop) {
  loop.assertOnLoopThread()
  guard !closed else { return }
  if referenced { uv_ref(handle) } else { uv_unref(handle) }
}
