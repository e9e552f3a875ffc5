-- wrk script of scripts/bench-proxy: POSTs the chat completion in $BENCH_BODY (205 bytes) on every
-- keep-alive connection and, when done, prints one line "BENCH_JSON {...}": requests, duration,
-- errors (status = non-2xx/3xx answers) and latency percentiles in microseconds (wrk's histogram).
local path = os.getenv("BENCH_BODY")
local f = assert(io.open(path, "rb"), "BENCH_BODY: cannot read " .. tostring(path))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,'
      .. '"status":%d,"timeout":%d},"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"min":%d,"max":%d,'
      .. '"mean":%.1f,"stdev":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.min, latency.max, latency.mean, latency.stdev))
end
