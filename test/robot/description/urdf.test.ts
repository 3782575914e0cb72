import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importUrdf } from '../../../robot/description/urdf.js';
import { parseXml } from '../../../robot/description/xml.js';
import type { JointDescription } from '../../../robot/description/types.js';
import { identity, transformPoint } from '../../../robot/math/transform.js';
import { vec3 } from '../../../robot/math/vec3.js';
import { KinematicChain } from '../../../robot/kinematics/chain.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, msg: string): void => {
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${msg}: [${i}] ${a[i]} vs ${b[i]}`);
};

// A planar two-link arm with a fixed mount, an x-axis (default) joint, a −z joint, a prismatic
// joint, a continuous wrist, a tool link after the tip and a camera hanging off link1.
const ARM = `<?xml version="1.0"?>
<!-- test arm -->
<robot name="arm">
  <link name="world"/> <link name="base"/> <link name="link1"/> <link name="link2"/>
  <link name="slide"/> <link name="wrist"/> <link name="tool"/> <link name="camera"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/><origin xyz="0 0 0.5"/></joint>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="link1"/><axis xyz="0 0 -2"/>
    <limit lower="-1" upper="1.5" velocity="2" effort="1"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="link1"/><child link="link2"/><origin xyz="1 0 0" rpy="0 0 0"/>
    <limit lower="-3" upper="3" velocity="2"/>
  </joint>
  <joint name="j3" type="prismatic">
    <parent link="link2"/><child link="slide"/><origin xyz="0 0 0" rpy="0 1.5707963267948966 0"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0.2" velocity="0.1"/>
  </joint>
  <joint name="j4" type="continuous"><parent link="slide"/><child link="wrist"/><axis xyz="0 1 0"/></joint>
  <joint name="tool_mount" type="fixed"><parent link="wrist"/><child link="tool"/><origin xyz="0 0 0.1"/></joint>
  <joint name="cam_mount" type="fixed"><parent link="link1"/><child link="camera"/><origin xyz="0.5 0 0.05"/></joint>
</robot>`;

function chainFrom(xml: string, tip?: string): KinematicChain {
  const r = importUrdf(xml, tip ? { tipLink: tip } : {});
  assert.ok(r.ok, r.ok ? '' : r.errors.join('; '));
  const joints: JointDescription[] = r.chain.joints.map((j) => {
    const l = r.chain.limits.get(j.name)!;
    return {
      ...j,
      limits: {
        lower: l.lower ?? -Infinity,
        upper: l.upper ?? Infinity,
        velocity: l.velocity ?? 1,
        acceleration: 1,
        jerk: 1,
      },
    };
  });
  return new KinematicChain({ name: 'arm', joints, links: r.chain.links, flange: r.chain.flange, tcp: identity() });
}

test('URDF import: fixed joints folded, chain base → tip found, limits read', () => {
  assert.match((importUrdf(ARM) as { errors: string[] }).errors[0], /2 tip links below "world" \(tool, camera\)/);
  const r = importUrdf(ARM, { tipLink: 'tool' });
  assert.ok(r.ok);
  const c = r.chain;
  assert.equal(c.robotName, 'arm');
  assert.equal(c.baseLink, 'world');
  assert.deepEqual(
    c.joints.map((j) => [j.name, j.type]),
    [
      ['j1', 'revolute'],
      ['j2', 'revolute'],
      ['j3', 'prismatic'],
      ['j4', 'continuous'],
    ],
  );
  assert.deepEqual(c.limits.get('j1'), { lower: -1, upper: 1.5, velocity: 2 });
  assert.deepEqual(c.limits.get('j4'), {});
  // The mount's 0.5 m lift is folded into j1's origin; the tool's 0.1 m into the flange.
  assert.equal(c.joints[0].origin[11], 0.5);
  assert.equal(c.flange[11], 0.1);
  // Axes are normalised; the default axis is x.
  assert.deepEqual(c.joints[0].axis, [0, 0, -1]);
  assert.deepEqual(c.joints[1].axis, [1, 0, 0]);
  const links = new Map(c.links.map((l) => [l.name, l]));
  assert.deepEqual([...links.keys()].sort(), ['base', 'camera', 'link1', 'link2', 'slide', 'tool', 'world', 'wrist']);
  assert.equal(links.get('base')!.frame, 0);
  assert.equal(links.get('camera')!.frame, 1);
  assert.equal(links.get('tool')!.frame, 4);
});

test('URDF chain FK: hand-computed poses for revolute about −z, x, prismatic and continuous joints', () => {
  const chain = chainFrom(ARM, 'tool');
  const p = (q: number[]): number[] => {
    const t = forwardKinematics(chain, q, new Float64Array(12));
    return [t[3], t[7], t[11]];
  };
  // q = 0: link1 at z 0.5, link2 at x 1, slide rotated so its z is world +x, tool 0.1 further along +x.
  close(p([0, 0, 0, 0]), [1.1, 0, 0.5], 1e-12, 'zero');
  // j1 = π/2 about −z turns +x into −y.
  close(p([Math.PI / 2, 0, 0, 0]), [0, -1.1, 0.5], 1e-12, 'j1');
  // j3 slides 0.2 along the slide's z (world +x at j1 = 0).
  close(p([0, 0, 0.2, 0]), [1.3, 0, 0.5], 1e-12, 'j3');
  // j2 about link2's x (world +x): the tool points along x, so rotation about x does not move it.
  close(p([0, 1, 0, 0]), [1.1, 0, 0.5], 1e-12, 'j2');
  // j4 = π/2 about the wrist's y: the tool offset 0.1·ẑ becomes 0.1·x̂ of the slide frame,
  // and the slide's x is world −z (the slide is the link2 frame pitched by π/2).
  close(p([0, 0, 0, Math.PI / 2]), [1, 0, 0.4], 1e-12, 'j4');
  // The camera link sits 0.5 m along link1's x and 0.05 m up, carried by j1.
  const frames = new Float64Array((chain.dof + 1) * 12);
  forwardKinematics(chain, [Math.PI / 2, 0, 0, 0], new Float64Array(12), frames);
  const local = vec3();
  const frame = chain.linkPoint('camera', [0, 0, 0], local);
  const world = transformPoint(vec3(), frames.subarray(frame * 12, frame * 12 + 12), local);
  close(world, [0, -0.5, 0.55], 1e-12, 'camera');
});

test('URDF import errors name the problem', () => {
  const cases: [string, RegExp, { baseLink?: string; tipLink?: string }?][] = [
    [
      '<robot><link name="a"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/></joint></robot>',
      /link "b" is not defined/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><link name="c"/><joint name="j1" type="fixed"><parent link="a"/><child link="c"/></joint><joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint></robot>',
      /two parent joints/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><joint name="j" type="floating"><parent link="a"/><child link="b"/></joint></robot>',
      /type "floating" is not supported/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/></joint></robot>',
      /axis is zero/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0"/></joint></robot>',
      /three finite numbers/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/><limit lower="x"/></joint></robot>',
      /limit lower = "x"/,
    ],
    [
      '<robot><link name="a"/><link name="b"/><link name="c"/><joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint><joint name="j2" type="fixed"><parent link="a"/><child link="c"/></joint></robot>',
      /2 tip links below "a" \(b, c\): name tip_link/,
    ],
    ['<robot><link name="a"/><link name="b"/></robot>', /2 root links/],
    [
      '<robot><link name="a"/><link name="b"/><joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>',
      /tip_link "a" is not below base_link "b"/,
      { baseLink: 'b', tipLink: 'a' },
    ],
    ['<robot><link name="a"/></robot>', /base_link "z" is not a link/, { baseLink: 'z' }],
    ['<model/>', /root element is <model>/],
    ['<robot><link name="a"></robot>', /XML line 1: closing tag <\/robot> does not match <link>/],
  ];
  for (const [xml, pattern, options] of cases) {
    const r = importUrdf(xml, options);
    assert.ok(!r.ok, `accepted: ${xml}`);
    assert.match(r.errors.join('; '), pattern, xml);
  }
});

test('XML reader: attributes, entities, comments, CDATA, self-closing tags, line numbers', () => {
  const r = parseXml(
    `<?xml version="1.0"?>\n<!DOCTYPE x>\n<a k='1' v="&lt;&amp;&#65;&#x42;">\n<!-- <b> -->\n<![CDATA[<c>]]>text<d/>\n<e x="2"></e></a>`,
  );
  assert.ok(r.ok);
  assert.equal(r.root.name, 'a');
  assert.deepEqual(r.root.attributes, { k: '1', v: '<&AB' });
  assert.deepEqual(
    r.root.children.map((c) => [c.name, c.line]),
    [
      ['d', 5],
      ['e', 6],
    ],
  );
  for (const [xml, pattern] of [
    ['<a><b></a>', /line 1: closing tag <\/a> does not match <b>/],
    ['<a>\n<b>', /element <b> \(line 2\) is never closed/],
    ['<a/><b/>', /second root element/],
    ['<a x=1/>', /malformed attribute in <a>/],
    ['<!-- x', /unterminated markup/],
    ['', /no root element/],
  ] as const) {
    const bad = parseXml(xml);
    assert.ok(!bad.ok, xml);
    assert.match(bad.error, pattern);
  }
});
