// A pull of the CrowdSec decisions stream sent from a chosen client address on loopback (127.x.y.z), as a bouncer
// on another host would send it: the appliance keeps a cursor per key and client address.

import { request } from "node:http";

export interface DecisionStream {
  new: { value: string }[];
  deleted: { value: string }[];
}

/** GET /v1/decisions/stream?query on 127.0.0.1:port with `key`, from `from`; the parsed body, or a rejection. */
export function pullDecisions(port: number, key: string, from: string, query = ""): Promise<DecisionStream> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: `/v1/decisions/stream?${query}`, localAddress: from, headers: { "x-api-key": key } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body) as DecisionStream) : reject(new Error(`${res.statusCode} ${body}`))));
    });
    req.on("error", reject);
    req.end();
  });
}
