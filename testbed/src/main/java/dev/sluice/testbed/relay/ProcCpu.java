package dev.sluice.testbed.relay;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time another process has used, read from Linux's {@code /proc}: all of it, and the part of
 * its threads whose name starts with a prefix (the gateway's event loops are {@code sluice-io-*}).
 * Clock ticks of {@code USER_HZ} (100 per second on Linux).
 */
final class ProcCpu {
    static final double TICKS_PER_SECOND = 100.0;

    /** CPU seconds: the whole process, and its threads named {@code prefix*}. */
    record Sample(double processSeconds, double threadSeconds) {
        Sample minus(Sample o) {
            return new Sample(processSeconds - o.processSeconds, threadSeconds - o.threadSeconds);
        }
    }

    private ProcCpu() {
    }

    static Sample read(long pid, String prefix) {
        double process = ticks(Path.of("/proc", Long.toString(pid), "stat"), null);
        double threads = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : tasks) {
                threads += ticks(t.resolve("stat"), prefix);
            }
        } catch (IOException e) {
            threads = Double.NaN;
        }
        return new Sample(process / TICKS_PER_SECOND, threads / TICKS_PER_SECOND);
    }

    /** utime + stime of one stat file, 0 when its comm does not start with {@code prefix} (null: any). */
    private static double ticks(Path stat, String prefix) {
        String s;
        try {
            s = Files.readString(stat);
        } catch (IOException e) {
            return 0; // a thread that ended
        }
        int open = s.indexOf('(');
        int close = s.lastIndexOf(')');
        if (prefix != null && !s.substring(open + 1, close).startsWith(prefix)) {
            return 0;
        }
        // fields after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15)
        String[] f = s.substring(close + 2).split(" ");
        return Double.parseDouble(f[11]) + Double.parseDouble(f[12]);
    }
}
