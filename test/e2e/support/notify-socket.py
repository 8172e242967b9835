# A stand-in for systemd's notification socket (sd_notify(3)): binds a unix datagram socket at argv[1], prints each
# message as one line on stdout, and closes the file descriptors a message carries, as the service manager does
# with systemd-notify's BARRIER=1 (sd_notify_barrier), so the sender is not left waiting. Runs until killed.
import array, os, socket, sys

path = sys.argv[1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
os.chmod(path, 0o777)
print("listening", flush=True)
while True:
    data, ancillary, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
            for fd in fds:
                os.close(fd)
    print(data.decode("utf-8", "replace").replace("\n", " "), flush=True)
