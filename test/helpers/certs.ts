// A throwaway CA and a server certificate for 127.0.0.1 made with the openssl CLI, for TLS tests.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A CA and a server certificate for 127.0.0.1 (P-256), or undefined without openssl. */
export function makeCerts(dir: string): { ca: string; cert: string; key: string } | undefined {
  const f = (name: string) => join(dir, name);
  writeFileSync(f('ext'), 'subjectAltName=IP:127.0.0.1\n');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const steps = [
    ['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=bs-test-ca'],
    ['req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1'],
    ['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial'],
  ];
  steps[2]!.push('-out', f('server.pem'), '-days', '2', '-extfile', f('ext'));
  for (const args of steps) {
    const r = spawnSync('openssl', args, { stdio: 'pipe' });
    if (r.error || r.status !== 0) return undefined;
  }
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') };
}
