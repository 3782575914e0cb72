// Training text for the synthetic BPE tokenizer: English prose, numbers, JSON tool calls and a
// little code, so the learned merges cover what the daemon's prompts look like.
export const TOKENIZER_CORPUS = `
The robot arm moves the gripper to the red block on the table. Then it lifts the block and
places it inside the blue box. The controller reports the measured joint positions every ten
milliseconds, and the daemon checks that the tracking error stays below the limit.
When the model wants to move the arm, it calls a tool. The tool result tells the model where
the arm is now, whether the gripper is open or closed, and what went wrong if the move failed.
The user asks: "Please pick up the cup and put it on the shelf." The assistant thinks about the
task, plans a path, and answers with a tool call. After the tool returns, the assistant checks
the result and decides what to do next. If the path is blocked, it tries another approach.
The daemon serves a mixture of experts model from the local disk. Each token is routed to a few
experts in every layer, and only those experts are read from the file. The router predicts the
next layer, so the reads overlap the computation. Memory stays small, and the model stays fast.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 16 24 32 48 64 100 128 256 512 1000 1024 2048 4096 0.5 0.25
0.125 1.5 2.5 3.14159 -1 -0.5 90 180 360 0.001 0.002 0.08 0.5 1e-6 2024 2025 2026.
{"name": "move_to", "arguments": {"target": {"pose_xyzquat": [0.4, 0.1, 0.25, 0, 0, 0, 1]}, "note": "above the cup"}}
{"name": "set_gripper", "arguments": {"gripper": 0.0}}
{"name": "set_gripper", "arguments": {"gripper": 1.0}}
{"name": "move_eef_chunk", "arguments": {"poses": [{"pose_xyzquat": [0.3, 0.0, 0.2, 0, 0, 0, 1]}], "note": "lower"}}
{"name": "done", "arguments": {"summary": "The cup is on the shelf.", "hindsight": "Grasp from the side."}}
{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
{"status": "ok", "joints": [0.1, -0.5, 1.2, 0.0, 0.3, -0.2], "gripper": 0.8, "error": null}
{"status": "error", "reason": "unreachable", "sample": 12, "message": "the target is outside the workspace"}
function add(a, b) {
  return a + b;
}
for (let i = 0; i < n; i++) {
  total += values[i] * weights[i];
}
def forward(self, x):
    h = x + self.attention(self.norm(x))
    return h + self.mlp(self.post_norm(h))
The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single
step. It is what it is. There is no place like home. The weather today is sunny with a light
breeze from the west, and the temperature is about twenty degrees. Tomorrow it will rain.
Les robots travaillent ensemble. Die Roboter arbeiten zusammen. Los robots trabajan juntos.
Safety first: the arm holds still on any doubt, and a stale controller ends the move at once.
The planner samples the path, solves inverse kinematics for every sample, checks the joint
limits and the collisions, and then assigns timestamps with a jerk limited profile.
`;
