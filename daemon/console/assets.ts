// The console's files, read once at start: the page's own (daemon/console/web) and the vendored
// libraries from node_modules (three.js, uPlot), each served at a fixed path (no path is built
// from a request) with its ETag, type and a gzip copy made when first asked for.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { repoRoot } from '../util/repo-root.js';

export interface Asset {
  body: Buffer;
  /** The gzip copy, made on first use (compressing three.js takes a while: not at every start). */
  gzip(): Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export const WEB_DIR = join(repoRoot, 'daemon', 'console', 'web');

/** URL path under /console/vendor/ → the file in node_modules. */
function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const threeBuild = dirname(require.resolve('three'));
  return {
    'three.module.js': join(threeBuild, 'three.module.js'),
    'three.core.js': join(threeBuild, 'three.core.js'),
    'OrbitControls.js': require.resolve('three/addons/controls/OrbitControls.js'),
    'uPlot.esm.js': require.resolve('uplot/dist/uPlot.esm.js'),
    'uPlot.min.css': require.resolve('uplot/dist/uPlot.min.css'),
  };
}

function asset(file: string): Asset {
  const body = readFileSync(file);
  const type = TYPES[extname(file)];
  if (!type) throw new Error(`console asset ${file}: no content type for ${extname(file)}`);
  let gz: Buffer | undefined;
  return {
    body,
    gzip: () => (gz ??= gzipSync(body)),
    type,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/** Every served file by URL path: /console/<name> for the page's files, /console/vendor/<name> for libraries. */
export function loadAssets(webDir = WEB_DIR): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const name of readdirSync(webDir).sort()) {
    if (TYPES[extname(name)]) out.set(`/console/${name}`, asset(join(webDir, name)));
  }
  for (const [name, file] of Object.entries(vendorFiles())) out.set(`/console/vendor/${name}`, asset(file));
  return out;
}

/** The sha256 CSP sources of a page's inline <script> blocks (its import map). */
export function inlineScriptHashes(html: string): string[] {
  return [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)]
    .filter((m) => m[1]!.trim() !== '')
    .map((m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`);
}

/** A page with the CSP hashes of its inline scripts. */
export interface Page {
  asset: Asset;
  hashes: string[];
}

export interface ConsoleFileSet {
  assets: Map<string, Asset>;
  console: Page;
  login: Page;
  /** The login page saying the token was wrong. */
  failedLogin: Page;
}

/**
 * The console's files, read on the first request rather than at every daemon start (reading and
 * hashing 2 MB of three.js is not free, and most daemons never serve the page).
 */
export class ConsoleFiles {
  private set?: ConsoleFileSet;

  constructor(readonly webDir = WEB_DIR) {}

  /** Why the page cannot be served, checked cheaply at start; null when its folder is there. */
  problem(): string | null {
    return existsSync(join(this.webDir, 'index.html')) ? null : `${join(this.webDir, 'index.html')} is missing`;
  }

  get(): ConsoleFileSet {
    if (this.set) return this.set;
    const assets = loadAssets(this.webDir);
    const page = (name: string): Page => {
      const asset = assets.get(`/console/${name}`);
      if (!asset) throw new Error(`console page ${name} is missing in ${this.webDir}`);
      return { asset, hashes: inlineScriptHashes(asset.body.toString('utf8')) };
    };
    const login = page('login.html');
    const failed = Buffer.from(
      login.asset.body.toString('utf8').replace(' data-login-error hidden', ' data-login-error'),
    );
    const failedGzip = gzipSync(failed);
    const failedLogin = {
      asset: { ...login.asset, body: failed, gzip: () => failedGzip, etag: '"login-failed"' },
      hashes: login.hashes,
    };
    this.set = { assets, console: page('index.html'), login, failedLogin };
    return this.set;
  }
}
