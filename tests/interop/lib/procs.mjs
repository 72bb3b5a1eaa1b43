// Host-side view of processes: finds the sandboxed programs of a run by a unique marker in their
// argv. The tests run in the host's PID namespace, so every sandboxed process is visible here.
import { readdirSync, readFileSync } from 'node:fs';

import { sleep } from './server.mjs';

// PIDs of live processes whose argv contains `marker` as one argument (zombies have an empty
// cmdline and do not count).
export function findByMarker(marker) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (argv.includes(marker)) pids.push(Number(entry));
  }
  return pids;
}

// Polls until pred() is truthy; returns its value, or throws after `ms` with `what`.
export async function waitUntil(pred, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

// Python that starts a child process carrying `marker` in its argv (a grandchild of the sandbox's
// init, in its own session, as a daemon would), says so, then sleeps `seconds`.
export function markerProgram(marker, seconds = 30) {
  return `import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", ${JSON.stringify(marker)}],
                 start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("spawned", flush=True)
time.sleep(${seconds})
print("not cancelled")`;
}
