// FileWatcher: a uv_fs_event_t.
import CLibUV

/// Calls a handler on the loop thread when something in a watched directory (or a watched file) changes
/// (`uv_fs_event_t`: inotify on Linux). The handler gets the name of the entry that changed, when the kernel says.
///
/// Watch the directory holding a file rather than the file itself: editors and deploy tools replace a file by
/// writing a new one and renaming it over the old, which ends a watch on the old inode. Events come in bursts (one
/// save is several writes and a rename): debounce them. Loop thread only; alive until `close()`. Does not keep the
/// loop alive.
public final class FileWatcher: LoopHandleOwner {
  let loop: UVLoop
  private let handle: UnsafeMutablePointer<uv_fs_event_t>
  private var handler: ((String?) -> Void)?
  /// The watched path.
  public let path: String
  /// `true` once `close()` has been called.
  public private(set) var isClosed = false

  init(loop: UVLoop, path: String, handler: @escaping (String?) -> Void) throws(UVError) {
    self.loop = loop
    self.path = path
    self.handler = handler
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_fs_event_t())
    let rc = uv_fs_event_init(loop.uvLoop, handle)
    if rc < 0 {
      handle.deallocate()  // never registered with the loop
      throw UVError(code: rc, operation: "uv_fs_event_init")
    }
    retainOwner(self, in: asHandle(handle))
    do {
      try check(
        uv_fs_event_start(
          handle,
          { h, filename, _, _ in
            guard let h, let watcher = owner(of: asHandle(h), as: FileWatcher.self) else { return }
            watcher.handler?(filename.map { String(cString: $0) })
          }, path, 0), "uv_fs_event_start(\(path))")
    } catch {
      close()
      throw error
    }
    setReferenced(asHandle(handle), false, closed: false, on: loop)
  }

  /// Stops watching and releases the handler. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    guard !isClosed else { return }
    isClosed = true
    uv_close(asHandle(handle)) { h in
      guard let h, let watcher = releaseOwner(of: h, as: FileWatcher.self) else { return }
      watcher.handler = nil
      watcher.handle.deallocate()
    }
  }

  func closeForLoopShutdown() { close() }
}

extension UVLoop {
  /// Watches `path` (a directory or a file) for changes; see ``FileWatcher``.
  public func watch(_ path: String, _ handler: @escaping (String?) -> Void) throws(UVError) -> FileWatcher {
    assertUsable()
    return try FileWatcher(loop: self, path: path, handler: handler)
  }
}
