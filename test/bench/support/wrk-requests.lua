-- Requests for wrk, prepared once in init() and handed out in turn, so the load generator does the same
-- small work for the ceiling and for the server under test.
--   wrk ... -s wrk-requests.lua URL -- get PATHS_FILE API_KEY    (one path per line)
--   wrk ... -s wrk-requests.lua URL -- post PATH BODIES_FILE API_KEY   (one JSON body per line)
--   wrk ... -s wrk-requests.lua URL -- reports PATH REQUESTS_FILE      (one "TOKEN<TAB>JSON BODY" per line, each
--                                                                     sent once in order: a report sent twice by
--                                                                     one reporter within 15 minutes is a 429)
-- done() prints one line "WRKJSON {...}" with the counts and latency figures (microseconds).

local requests = {}
local count = 0
local at = 0

function init(args)
  local mode = args[1]
  if mode == "get" then
    local headers = { ["X-API-Key"] = args[3] }
    for line in io.lines(args[2]) do
      count = count + 1
      requests[count] = wrk.format("GET", line, headers)
    end
  elseif mode == "reports" then
    for line in io.lines(args[3]) do
      local tab = string.find(line, "\t", 1, true)
      local headers = { ["Authorization"] = "Bearer " .. string.sub(line, 1, tab - 1), ["Content-Type"] = "application/json" }
      count = count + 1
      requests[count] = wrk.format("POST", args[2], headers, string.sub(line, tab + 1))
    end
    return
  else
    local headers = { ["X-API-Key"] = args[4], ["Content-Type"] = "application/json" }
    for line in io.lines(args[3]) do
      count = count + 1
      requests[count] = wrk.format("POST", args[2], headers, line)
    end
  end
  -- Threads start at different places in the list.
  at = math.random(count) - 1
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
