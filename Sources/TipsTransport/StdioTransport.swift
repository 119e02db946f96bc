// StdioTransport: stdin/stdout as a UVStream; ProcessSignals.
import CLibUV
import Glibc
import Synchronization
import TipsSystem

/// JSON-RPC over the process's standard streams.
public enum StdioTransport {
  private static let opened = Atomic<Bool>(false)

  /// Wraps stdin (fd 0) and stdout as one `UVStream`, reading fd 0 and
  /// writing to a private duplicate of fd 1. Fd 1 is then pointed at stderr
  /// (`dup2(2, 1)`), so a stray `print` can never corrupt the protocol stream.
  ///
  /// stdin/stdout may be pipes, sockets or terminals, or regular files (bridged
  /// through a pipe by a thread; call `finishPumps()` before exiting). End of input on stdin closes the connection with `.eof` (after
  /// flushing replies queued in that turn). Can be called once per process.
  public static func open(loop: UVLoop) throws(TransportError) -> UVStream {
    loop.assertUsable()
    guard opened.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
      throw TransportError("StdioTransport.open was already called; stdin/stdout can be wrapped only once")
    }
    let protocolOut = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)
    if protocolOut < 0 {
      let cause = UVError(code: -errno, operation: "fcntl(1, F_DUPFD_CLOEXEC)")
      opened.store(false, ordering: .relaxed)
      throw TransportError("cannot duplicate stdout; is it open?", cause: cause)
    }
    // libuv cannot poll regular files (`tipsd serve --stdio < requests.jsonl > replies.jsonl`): such an end is
    // bridged through a pipe pumped by a thread of its own.
    var inputFD = STDIN_FILENO
    var outputFD = protocolOut
    if uv_guess_handle(STDIN_FILENO) == UV_FILE, let pipeEnd = FilePump.start(from: STDIN_FILENO, intoPipe: true) {
      inputFD = pipeEnd
    }
    if uv_guess_handle(protocolOut) == UV_FILE, let pipeEnd = FilePump.start(from: protocolOut, intoPipe: false) {
      outputFD = pipeEnd
    }
    let connection: UVStream
    do {
      connection = try open(loop: loop, inputFD: inputFD, outputFD: outputFD)
    } catch {
      Glibc.close(protocolOut)
      opened.store(false, ordering: .relaxed)
      throw error
    }
    // From now on fd 1 is stderr: only `connection` reaches the real stdout.
    // (Output still buffered in `stdout` also lands on stderr, which is the point.)
    _ = dup2(STDERR_FILENO, STDOUT_FILENO)
    return connection
  }

  /// Wraps already-open descriptors as a `UVStream` (pipes, sockets or ttys).
  /// The connection owns them from now on: closing it closes both (fds 0–2 are
  /// never closed by libuv). `inputFD == outputFD` (e.g. one end of a
  /// socketpair) uses a single handle for both directions.
  public static func open(loop: UVLoop, inputFD: Int32, outputFD: Int32) throws(TransportError) -> UVStream {
    loop.assertUsable()
    let input = try openStream(loop: loop, fd: inputFD, readable: true, writable: inputFD == outputFD, role: "input")
    if inputFD == outputFD {
      return UVStream(loop: loop, input: input, output: input, isUnixSocket: false)
    }
    let output: UnsafeMutablePointer<uv_stream_t>
    do {
      output = try openStream(loop: loop, fd: outputFD, readable: false, writable: true, role: "output")
    } catch {
      closeOrphanStream(input)
      throw error
    }
    return UVStream(loop: loop, input: input, output: output, isUnixSocket: false)
  }

  /// Opens `fd` as a pipe, tty or TCP stream depending on `uv_guess_handle`.
  static func openStream(loop: UVLoop, fd: Int32, readable: Bool, writable: Bool, role: String)
    throws(TransportError) -> UnsafeMutablePointer<uv_stream_t>
  {
    func failure(_ rc: Int32, _ op: String) -> TransportError {
      TransportError("cannot use fd \(fd) as the protocol \(role)", cause: UVError(code: rc, operation: op))
    }
    let kind = uv_guess_handle(fd)
    switch kind {
    case UV_NAMED_PIPE:  // pipes, FIFOs and Unix-domain sockets
      let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
      pipe.initialize(to: uv_pipe_t())
      let rc = uv_pipe_init(loop.uvLoop, pipe, 0)
      if rc < 0 { pipe.deallocate(); throw failure(rc, "uv_pipe_init") }
      let opened = uv_pipe_open(pipe, fd)
      if opened < 0 { closeOrphanStream(asStream(pipe)); throw failure(opened, "uv_pipe_open") }
      return asStream(pipe)
    case UV_TTY:
      let tty = UnsafeMutablePointer<uv_tty_t>.allocate(capacity: 1)
      tty.initialize(to: uv_tty_t())
      // On failure uv_tty_init returns before registering the handle.
      let rc = uv_tty_init(loop.uvLoop, tty, fd, readable ? 1 : 0)
      if rc < 0 { tty.deallocate(); throw failure(rc, "uv_tty_init") }
      return asStream(tty)
    case UV_TCP:
      let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
      tcp.initialize(to: uv_tcp_t())
      let rc = uv_tcp_init(loop.uvLoop, tcp)
      if rc < 0 { tcp.deallocate(); throw failure(rc, "uv_tcp_init") }
      let opened = uv_tcp_open(tcp, uv_os_sock_t(fd))
      if opened < 0 { closeOrphanStream(asStream(tcp)); throw failure(opened, "uv_tcp_open") }
      return asStream(tcp)
    case UV_FILE:
      throw TransportError(
        "the protocol \(role) (fd \(fd)) is a regular file or device; tipsd needs a pipe, socket or terminal "
          + "(e.g. use `cat requests.jsonl | tipsd` instead of `tipsd < requests.jsonl`)")
    case UV_UDP:
      throw TransportError("the protocol \(role) (fd \(fd)) is a datagram socket; tipsd needs a stream")
    default:
      throw TransportError("the protocol \(role) (fd \(fd)) is not open or of an unsupported kind")
    }
  }
}

/// Copies between a regular file and a pipe on a thread of its own, for stdio ends libuv cannot poll.
enum FilePump {
  /// Threads copying the protocol output into a file; joined by ``StdioTransport/finishPumps()``.
  nonisolated(unsafe) static var outputThreads: [pthread_t] = []

  /// Context handed to the thread: `(source, destination)`.
  final class Job {
    let source: Int32
    let destination: Int32
    init(source: Int32, destination: Int32) {
      self.source = source
      self.destination = destination
    }
  }

  /// `intoPipe`: the file is read into a new pipe whose read end is returned; otherwise the returned write end
  /// of a new pipe is copied into the file.
  static func start(from file: Int32, intoPipe: Bool) -> Int32? {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return nil }
    _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
    let job = intoPipe ? Job(source: file, destination: fds[1]) : Job(source: fds[0], destination: file)
    var thread = pthread_t()
    let context = Unmanaged.passRetained(job).toOpaque()
    let rc = pthread_create(
      &thread, nil,
      { raw in
        let job = Unmanaged<FilePump.Job>.fromOpaque(raw!).takeRetainedValue()
        System.copy(from: job.source, to: job.destination)
        // Closing the pipe's write end is the reader's end of input; a file destination is left to the process.
        if job.destination != STDOUT_FILENO && job.destination > 2 { close(job.destination) }
        if job.source > 2 { close(job.source) }
        return nil
      }, context)
    guard rc == 0 else {
      Unmanaged<Job>.fromOpaque(context).release()
      close(fds[0])
      close(fds[1])
      return nil
    }
    if intoPipe {
      pthread_detach(thread)
      return fds[0]
    }
    outputThreads.append(thread)
    return fds[1]
  }
}

extension StdioTransport {
  /// Waits until protocol output bridged into a regular file has been written out. Call after the loop is
  /// closed (its connection closed the pipe), before the process exits.
  public static func finishPumps() {
    for thread in FilePump.outputThreads { pthread_join(thread, nil) }
    FilePump.outputThreads.removeAll()
  }
}

/// Process-wide signal dispositions.
public enum ProcessSignals {
  /// Ignores SIGPIPE so a write to a vanished peer fails with `EPIPE` (reported
  /// as `CloseReason.error`) instead of killing the process. Call once at startup.
  public static func ignoreSIGPIPE() {
    tipsd_ignore_sigpipe()
  }

  /// Unblocks SIGTERM and SIGINT in case the parent left them blocked in the inherited mask. Call once at
  /// startup, before watching them.
  public static func unblockTerminationSignals() {
    tipsd_unblock_termination_signals()
  }
}
