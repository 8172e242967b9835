-- Lookups for wrk, paced: each connection waits a fixed delay before each request, so wrk offers a steady rate
-- (connections / delay) well below the server's ceiling instead of saturating it (the stalls benchmark).
--   wrk ... -s wrk-paced.lua URL -- PATHS_FILE API_KEY DELAY_MS    (one path per line)
-- done() prints one line "WRKJSON {...}" as wrk-requests.lua does.

local requests = {}
local count = 0
local at = 0
local pause = 0

function init(args)
  local headers = { ["X-API-Key"] = args[2] }
  for line in io.lines(args[1]) do
    count = count + 1
    requests[count] = wrk.format("GET", line, headers)
  end
  pause = tonumber(args[3])
  at = math.random(count) - 1
end

function delay()
  return pause
end

function request()
  at = at % count + 1
  return requests[at]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"bytes":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,' ..
    '"meanUs":%.1f,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read, e.write, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
