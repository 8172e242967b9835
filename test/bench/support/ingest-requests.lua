-- Report requests for wrk, prepared once in init() and handed out in order, each once (a report sent twice by
-- the same reporter within 15 minutes is a 429, which wrk counts as an error).
--   wrk ... -s ingest-requests.lua URL -- PATH REQUESTS_FILE    (one "TOKEN<TAB>JSON BODY" per line)
-- done() prints one line "WRKJSON {...}" with the counts and latency figures (microseconds), as wrk-requests.lua.

local requests = {}
local count = 0
local at = 0

function init(args)
  for line in io.lines(args[2]) do
    local tab = string.find(line, "\t", 1, true)
    local headers = { ["Authorization"] = "Bearer " .. string.sub(line, 1, tab - 1), ["Content-Type"] = "application/json" }
    count = count + 1
    requests[count] = wrk.format("POST", args[1], headers, string.sub(line, tab + 1))
  end
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
