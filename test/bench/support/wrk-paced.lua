-- Lookups for wrk, paced: each connection waits before each request, so wrk offers a steady rate (connections /
-- mean delay) well below the server's ceiling instead of saturating it (the stalls benchmark). The waits are
-- drawn from an exponential distribution of that mean, as independent clients arrive: with one fixed delay the
-- connections fall into step after any pause and come back together every delay, so the last of each burst
-- waited for the whole burst (p99 about connections x CPU per request, raw Bun.serve's too), which measured the
-- load generator's lockstep rather than the server.
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
  math.randomseed(count + pause)
  at = math.random(count) - 1
end

function delay()
  -- wrk takes whole milliseconds; rounding keeps the mean.
  return math.floor(-math.log(1 - math.random()) * pause + 0.5)
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
