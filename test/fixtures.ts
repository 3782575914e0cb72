// Paths of committed test fixtures (test/fixtures/), from the compiled tests under dist/test/.
import { fileURLToPath } from 'node:url';

export function fixturePath(relative: string): string {
  return fileURLToPath(new URL(`../../test/fixtures/${relative}`, import.meta.url));
}
