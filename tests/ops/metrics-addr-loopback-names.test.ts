// Rule: INTERLOCK_METRICS_ADDR may never be the service's own HTTP address (README configuration table), however that
// address is written: on the service's port, `localhost` names both loopbacks (127.0.0.1 and ::1), an IPv4 address
// mapped into IPv6 is that address, and a wildcard takes the port on every address of its family (0.0.0.0 on IPv4, ::
// on both). Such a start is refused with the sentence that names the clash, not left to fail later as a port "in use by
// another program"; addresses that bind side by side (127.0.0.1 and ::1, 0.0.0.0 and ::1) are taken.
import { describe, expect, it } from 'vitest';
import { assertMetricsAddrFree, ConfigError, loadConfig } from '../../src/config.js';

function clash(metrics: string, host: string, port = 3000): string | null {
  try {
    assertMetricsAddrFree({ ...loadConfig({ INTERLOCK_METRICS_ADDR: metrics }), host, port }, true);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
}

describe("INTERLOCK_METRICS_ADDR and the service's own address written another way", () => {
  it('refuses a loopback name on the service port as its own HTTP address, whichever name each side uses', () => {
    for (const [metrics, host] of [
      ['localhost:3000', '127.0.0.1'],
      ['127.0.0.1:3000', 'localhost'],
      ['[::ffff:127.0.0.1]:3000', '127.0.0.1'],
      ['LOCALHOST:3000', '::1'],
      ['[0:0:0:0:0:0:0:1]:3000', 'localhost'],
    ] as const) {
      const said = clash(metrics, host);
      expect([metrics, host, said]).toEqual([metrics, host, expect.stringContaining(`INTERLOCK_METRICS_ADDR (${metrics.replace(/^\[|\](?=:)/g, '')}) is the service's own HTTP address (${host}:3000; the same address however written: localhost names both 127.0.0.1 and ::1)`)]);
    }
  });

  it('refuses a wildcard on either side of the service port, naming why', () => {
    expect(clash('[::]:3000', '127.0.0.1')).toContain("is the service's own HTTP address (127.0.0.1:3000; a wildcard address takes the port on every address of its family: 0.0.0.0 on IPv4, :: on both)");
    expect(clash('localhost:3000', '0.0.0.0')).toContain("is the service's own HTTP address");
  });

  it('takes another address of the loopback, another host or another port', () => {
    expect(clash('127.0.0.2:3000', 'localhost')).toBeNull();
    expect(clash('localhost:3001', '127.0.0.1')).toBeNull();
    expect(clash('10.0.0.5:3000', '127.0.0.1')).toBeNull();
    // Two families bind side by side on one port: the IPv4 and IPv6 loopbacks, an IPv4 wildcard beside ::1.
    expect(clash('[::1]:3000', '127.0.0.1')).toBeNull();
    expect(clash('127.0.0.1:3000', '::1')).toBeNull();
    expect(clash('[::1]:3000', '0.0.0.0')).toBeNull();
  });
});
