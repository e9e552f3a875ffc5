"""Where scripts/diagnose reads from: HTTP (gateway, workers), Prometheus text, systemd and the
journal, a log file, nvidia-smi. Every reader returns what it found or why it found nothing; none
raises on a sick cluster (that is what it is there to look at)."""

import datetime
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request

# ---------------------------------------------------------------- HTTP


def http_get(url, timeout):
    """(status, body, error): status None and error set when nothing answered."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace"), None
    except urllib.error.HTTPError as e:  # an answer, with an error status
        try:
            body = e.read().decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - the status is what matters
            body = ""
        return e.code, body, None
    except Exception as e:  # noqa: BLE001 - refused, timeout, DNS, reset: all "no answer"
        reason = getattr(e, "reason", None) or e
        text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(reason))
        if "timed out" in text.lower():
            text = "no answer within %g s" % timeout
        return None, "", text


def http_json(url, timeout):
    """(status, parsed JSON or None, error)."""
    status, body, error = http_get(url, timeout)
    if status is None:
        return None, None, error
    try:
        return status, json.loads(body), None
    except ValueError:
        return status, None, "not JSON: %s" % body[:120].replace("\n", " ")


# ---------------------------------------------------------------- Prometheus text

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text):
    """[(name, {label: value}, float)] of a text exposition; comments and bad lines skipped."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, value))
    return samples


def select(samples, name, **labels):
    """The samples of one metric whose labels include the given ones."""
    return [(lb, v) for n, lb, v in samples
            if n == name and all(lb.get(k) == want for k, want in labels.items())]


def total(samples, name, **labels):
    """Sum over the matching samples (NaN skipped), or None when the metric is absent."""
    values = [v for _, v in select(samples, name, **labels) if v == v]
    return sum(values) if values else None


def by_label(samples, name, label):
    """{label value: summed value} for one metric."""
    out = {}
    for lb, v in select(samples, name):
        if v == v:
            out[lb.get(label, "")] = out.get(lb.get(label, ""), 0.0) + v
    return out


# ---------------------------------------------------------------- systemd and the journal


def systemd_running():
    return os.path.isdir("/run/systemd/system") and shutil.which("systemctl") is not None


_UNIT_PROPS = "LoadState,ActiveState,SubState,UnitFileState,StateChangeTimestamp,NRestarts,Result"


def services(units, timeout=10):
    """{"available": bool, "note": str, "units": [{unit, LoadState, ...}]}."""
    if not units:
        return {"available": False, "note": "not checked (--units none)", "units": []}
    if not systemd_running():
        note = ("systemctl is here but systemd is not running (not PID 1)" if shutil.which("systemctl")
                else "no systemd here")
        return {"available": False, "note": note, "units": []}
    out = []
    for unit in units:
        try:
            r = subprocess.run(["systemctl", "show", unit, "-p", _UNIT_PROPS], capture_output=True, text=True,
                               timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            out.append({"unit": unit, "error": str(e)})
            continue
        props = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        props["unit"] = unit
        out.append(props)
    return {"available": True, "note": "", "units": out}


def journal(units, since, timeout=20):
    """(lines, note): the journal of the loaded units since a local datetime."""
    if not units:
        return [], "no units to read"
    if not systemd_running() or shutil.which("journalctl") is None:
        return [], "no journal here (systemd not running)"
    cmd = ["journalctl", "--no-pager", "-q", "-o", "short-iso", "--since",
           since.astimezone().strftime("%Y-%m-%d %H:%M:%S")]  # journalctl reads it as local time
    for u in units:
        cmd += ["-u", u]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [], "journalctl failed: %s" % e
    if r.returncode != 0:
        return [], "journalctl failed: %s" % (r.stderr.strip() or "exit %d" % r.returncode)
    return r.stdout.splitlines(), "journalctl -u %s" % " -u ".join(units)


# ---------------------------------------------------------------- log files

# the gateway's own lines (2026-12-03T14:02:11.123+01:00 WARN ...), SGLang's ([2026-12-03 14:02:11] ...),
# journalctl -o short-iso (2026-12-03T14:02:11+0100 host unit[pid]: ...)
_STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,]\d+)?\s?(Z|[+-]\d\d:?\d\d)?")
ERROR_LINE = re.compile(
    r"\b(ERROR|WARN|WARNING|CRITICAL|FATAL|SEVERE)\b|Traceback|Exception|KVTransferError|out of memory|CUDA error"
    r"|outcome=(?!ok\b)\w+|\bejected\b|\bstall|refused|timed out|\bkilled\b|\bfailed\b|FAILURE|code=dumped")
KV_LINE = re.compile(r"KVTransferError|kv_transfer|KV transfer|transfer failed", re.IGNORECASE)


def line_time(line):
    """The line's leading timestamp as an aware datetime (local time when it names no zone), or None."""
    m = _STAMP.match(line)
    if not m:
        return None
    try:
        t = datetime.datetime.strptime(m.group(1) + " " + m.group(2), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    zone = m.group(3)
    if zone is None:
        return t.astimezone()  # naive: local time
    if zone == "Z":
        return t.replace(tzinfo=datetime.timezone.utc)
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return t.replace(tzinfo=datetime.timezone(sign * offset))


def in_window(lines, since):
    """The lines at or after `since`; a line without a timestamp goes with the line before it
    (a traceback goes with its first line), lines before the first timestamp are kept."""
    keep, current = [], True
    for line in lines:
        t = line_time(line)
        if t is not None:
            current = t >= since
        if current:
            keep.append(line)
    return keep


def log_file(path, since, max_bytes=4 << 20):
    """(lines in the window, note); reads at most the last max_bytes of the file."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return [], "cannot read %s: %s" % (path, e.strerror or e)
    lines = data.splitlines()
    if size > max_bytes and lines:
        lines = lines[1:]  # the first one is cut
    stamped = any(line_time(x) for x in lines[:200] + lines[-200:])
    return in_window(lines, since), ("" if stamped else "no timestamps recognised: the whole tail is shown")


# ---------------------------------------------------------------- GPUs

GPU_FIELDS = "index,memory.used,memory.total,utilization.gpu"


def gpus(nvidia_smi, timeout=15):
    """{"available": bool, "note": str, "gpus": [{index, used_mib, total_mib, util}], "error": str}."""
    exe = shutil.which(nvidia_smi)
    if exe is None:
        return {"available": False, "note": "no nvidia-smi here", "gpus": []}
    try:
        r = subprocess.run([exe, "--query-gpu=" + GPU_FIELDS, "--format=csv,noheader,nounits"], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"available": True, "note": "", "gpus": [], "error": "nvidia-smi did not answer in %d s" % timeout}
    except OSError as e:
        return {"available": True, "note": "", "gpus": [], "error": "nvidia-smi: %s" % e}
    if r.returncode != 0:
        text = (r.stdout + r.stderr).strip().splitlines()
        return {"available": True, "note": "", "gpus": [],
                "error": "nvidia-smi exit %d: %s" % (r.returncode, text[0] if text else "")}
    out = []
    for line in r.stdout.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4:
            continue
        out.append({"index": cells[0], "used_mib": _num(cells[1]), "total_mib": _num(cells[2]),
                    "util": _num(cells[3])})
    return {"available": True, "note": "", "gpus": out}


def _num(text):
    try:
        return float(text)
    except ValueError:
        return None  # [N/A]
