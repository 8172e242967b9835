// Readiness for systemd's Type=notify: once the server listens, READY=1 goes to $NOTIFY_SOCKET through Debian's
// `systemd-notify` (Bun has no unix datagram sockets), so `systemctl start` returns when the API answers.

/**
 * Tells the service manager the server is ready, when one asked (NOTIFY_SOCKET set); nothing otherwise.
 * `systemd-notify` (systemd 246 and later) waits until the manager has read the message, so the message is
 * attributed to the unit (NotifyAccess=all) although it comes from a child; a failure is logged, never fatal.
 */
export function notifyReady(status: string, env: Record<string, string | undefined> = process.env): void {
  if (!env.NOTIFY_SOCKET) return;
  let proc: ReturnType<typeof Bun.spawn<"ignore", "ignore", "pipe">>;
  try {
    proc = Bun.spawn(["systemd-notify", "--ready", `--status=${status}`], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  } catch (error) {
    console.warn(`systemd-notify: cannot run it, the service manager is not told the server is ready: ${(error as Error).message}`);
    return;
  }
  void proc.exited.then(async (code) => {
    if (code !== 0) console.warn(`systemd-notify --ready failed (exit ${code}): ${(await new Response(proc.stderr).text()).trim()}`);
  });
}
