// policy.start's context given as file paths (goal images, demonstrations) is compiled in the
// daemon. Every path is read only inside the context roots (<data_dir>/context and
// policy.context_roots), as a regular file or, for a frame folder, a folder of them, symlinks
// resolved, all through fs.promises: a FIFO or a device is refused, never opened.
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { FileAccessError, FileRoots, fileKind } from '../../util/file-roots.js';
import { compileContext } from '../context/compile.js';
import { type CompiledContext, ContextInputError } from '../context/types.js';

/** Relative context paths are taken from here (also a root). */
export const contextBase = (dataDir: string): string => join(dataDir, 'context');

/** The roots: <data_dir>/context, then the configured ones ("~" = home, relative = from the working directory). */
export function contextRoots(configured: readonly string[], dataDir: string): FileRoots {
  const expand = (p: string) => (p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p);
  return new FileRoots(
    [contextBase(dataDir), ...configured.map((r) => resolve(expand(r)))],
    'context',
    'policy.context_roots',
  );
}

/** Compiles the input (checked by checkContextInput); a path that may not be read is a ContextInputError naming its field. */
export function compileContextFiles(input: unknown, roots: FileRoots, base: string): Promise<CompiledContext> {
  return compileContext(input, {
    resolvePath: async (path, field) => {
      const abs = isAbsolute(path) ? path : resolve(base, path);
      try {
        if (field.endsWith('.dir')) {
          const e = await roots.entry(abs);
          if (!e.folder)
            throw new FileAccessError(`context path ${abs} is a file, not a frame folder`, 'not_regular', abs);
          return e.real;
        }
        const real = await roots.resolve(abs);
        const s = await stat(real);
        if (!s.isFile())
          throw new FileAccessError(`context file ${abs} is ${fileKind(s)}, not a regular file`, 'not_regular', abs);
        return real;
      } catch (e) {
        if (e instanceof FileAccessError) throw new ContextInputError(`${field}: ${e.message}`, field, abs);
        throw e;
      }
    },
  });
}
