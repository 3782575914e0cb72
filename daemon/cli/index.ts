// Every CLI command registers itself here: one file per command under daemon/cli/.
// Add a command by importing its registrar and appending it to `registrars`.
// Command files import `group`/`CommandRegistrar` from ./group.js, never from this file.
import type { CommandRegistrar } from './group.js';
import { registerBenchCompare } from './bench-compare.js';
import { registerBenchConstrained } from './bench-constrained.js';
import { registerBenchDecode } from './bench-decode.js';
import { registerBenchIk } from './bench-ik.js';
import { registerBenchLink } from './bench-link.js';
import { registerBenchLoad } from './bench-load.js';
import { registerBenchLora } from './bench-lora.js';
import { registerBenchMembw } from './bench-membw.js';
import { registerBenchPlan } from './bench-plan.js';
import { registerBenchPolicy } from './bench-policy.js';
import { registerBenchRender } from './bench-render.js';
import { registerBenchConsole } from './bench-console.js';
import { registerBenchTiming } from './bench-timing.js';
import { registerBenchVision } from './bench-vision.js';
import { registerConfigCheck } from './config-check.js';
import { registerDoctor } from './doctor.js';
import { registerLoraMergeCheck } from './lora-merge-check.js';
import { registerModelsSynth } from './models-synth.js';
import { registerPolicy } from './policy.js';
import { registerPrerouter } from './prerouter.js';
import { registerModelsSynthAdapter } from './models-synth-adapter.js';
import { registerMqttCredentials } from './mqtt-credentials.js';
import { registerSim } from './sim.js';
import { registerSimRender } from './sim-render.js';
import { registerStart } from './start.js';

export type { CommandRegistrar } from './group.js';

export const registrars: CommandRegistrar[] = [
  registerStart,
  registerDoctor,
  registerConfigCheck,
  registerBenchIk,
  registerBenchTiming,
  registerBenchLink,
  registerBenchLoad,
  registerBenchDecode,
  registerBenchMembw,
  registerBenchPlan,
  registerBenchPolicy,
  registerBenchRender,
  registerBenchConsole,
  registerSim,
  registerSimRender,
  registerMqttCredentials,
  registerModelsSynth,
  registerModelsSynthAdapter,
  registerLoraMergeCheck,
  registerBenchLora,
  registerBenchConstrained,
  registerBenchCompare,
  registerBenchVision,
  registerPrerouter,
  registerPolicy,
];
