// Whether this kernel has MADV_POPULATE_READ (Linux 5.14+): where it does, a prefaulted model's
// weights end `mapped`; elsewhere only `advised`.
import { platform, release } from 'node:os';

export function populateSupported(): boolean {
  if (platform() !== 'linux') return false;
  const [major = 0, minor = 0] = release().split('.').map(Number);
  return major > 5 || (major === 5 && minor >= 14);
}
