// The DNS blocklist's counters for /metrics (contract 17): queries answered by transport and rcode, and answers
// that said "listed". A few array increments per query; rendered by Metrics when scraped.

/** The rcode names (RFC 6895) the counters and the access log use: 0..15 from the header, 16 BADVERS (EDNS). */
export const DNS_RCODES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "RCODE11", "RCODE12", "RCODE13", "RCODE14", "RCODE15", "BADVERS"] as const;
const RCODES = DNS_RCODES.length;

export class DnsCounters {
  /** [transport * RCODES + rcode]: transport 0 udp, 1 tcp. */
  readonly queries = new Float64Array(2 * RCODES);
  listed = 0;
  /** UDP answers the kernel refused (the client's port closed: ICMP port unreachable), and other socket errors. */
  udpErrors = 0;

  record(tcp: boolean, rcode: number, listed: boolean): void {
    this.queries[(tcp ? RCODES : 0) + (rcode < RCODES ? rcode : 0)]++;
    if (listed) this.listed++;
  }

  /** Every (transport, rcode, count) with a count. */
  series(): { transport: string; rcode: string; count: number }[] {
    const out: { transport: string; rcode: string; count: number }[] = [];
    for (let i = 0; i < this.queries.length; i++) {
      if (this.queries[i] > 0) out.push({ transport: i < RCODES ? "udp" : "tcp", rcode: DNS_RCODES[i % RCODES], count: this.queries[i] });
    }
    return out;
  }
}
