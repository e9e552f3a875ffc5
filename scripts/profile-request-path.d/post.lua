-- a 205-byte chat completion POST; prints one JSON line (latency in microseconds)
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"sim-model","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in five words, please, and nothing more."}],"max_tokens":16,"temperature":0}'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"rps":%.1f,"p50_us":%d,"p99_us":%d,"errors":%d,"non_2xx":%d}\n',
    summary.requests, summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
