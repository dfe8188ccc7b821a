"""igrun_checks.py: what the igrun command-line tests share: running igrun
on the CPU with a timeout, an expected exit code and words of its output,
and counting failures (a death by signal is one, never an expected exit)."""
import subprocess
import sys


class Checks:
    def __init__(self, igrun):
        self.igrun_path = igrun
        self.failures = 0
        self.checks = 0

    def fail(self, msg):
        self.failures += 1
        print("FAIL: " + msg, file=sys.stderr)

    def igrun(self, *args):
        p = subprocess.run([self.igrun_path, "--device", "cpu", *args], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        if p.returncode < 0:
            self.fail("igrun %s died of signal %d" % (" ".join(args), -p.returncode))
        return p.returncode, p.stdout.decode(errors="replace")

    def expect(self, code, needles, *args):
        self.checks += 1
        rc, out = self.igrun(*args)
        if rc != code:
            self.fail("igrun %s exited %d, expected %d: %s" % (" ".join(args), rc, code,
                                                                out[-600:]))
        for n in needles if isinstance(needles, (list, tuple)) else [needles]:
            if n not in out:
                self.fail("igrun %s: output lacks '%s': %s" % (" ".join(args), n, out[-600:]))
        return out

    def finish(self, summary):
        print(summary)
        if self.failures:
            print("%d failures" % self.failures, file=sys.stderr)
            sys.exit(1)
        print("ok")
