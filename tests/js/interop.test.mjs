// The boundary between the JS shell and the core: constants the JS API exports come from the
// core, render errors keep their own code inside a compaction, and the retry decision the core
// makes reaches the shell as an object.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_PROVIDER_IMAGE_BUDGET,
  FRAME_DATA_BYTES_BUDGET,
  FRAME_DATA_BYTES_ESTIMATE,
  FRAME_TOKEN_ESTIMATE,
  isShapeVariantName,
  MAX_FRAMES_DEFAULT,
  Session,
  shapeVariantNames,
} from 'ctxfold';
import { sessionJsonl } from './support/runtime-workload.mjs';

test('snapcompact constants are the core values, set at import under Node.js', () => {
  // spec: snapcompact §5.3 (5,024 tokens a frame, at most 80 frames) and §9.6 (3 MB of frame
  // data per request, 170 KB assumed per frame, 5 images for an unknown provider).
  assert.deepEqual(
    {
      MAX_FRAMES_DEFAULT,
      FRAME_TOKEN_ESTIMATE,
      FRAME_DATA_BYTES_ESTIMATE,
      FRAME_DATA_BYTES_BUDGET,
      DEFAULT_PROVIDER_IMAGE_BUDGET,
    },
    {
      MAX_FRAMES_DEFAULT: 80,
      FRAME_TOKEN_ESTIMATE: 5024,
      FRAME_DATA_BYTES_ESTIMATE: 170000,
      FRAME_DATA_BYTES_BUDGET: 3000000,
      DEFAULT_PROVIDER_IMAGE_BUDGET: 5,
    },
  );
});

test('shape-name aliases come from the core', () => {
  assert.equal(isShapeVariantName('silver16-bw'), true);
  assert.equal(shapeVariantNames().includes('silver16-bw'), false);
  assert.equal(isShapeVariantName('auto'), false);
  assert.equal(isShapeVariantName('no-such-shape'), false);
});

test('a render option error inside a compaction keeps its render code, and nothing is written', async () => {
  const text = sessionJsonl({ turns: 6, lineRepeat: 60 });
  for (const [snapcompact, code] of [
    [{ maxFrames: 0 }, 'E_OPTIONS'],
    [{ frameSize: 2.5 }, 'E_OPTIONS'],
    [{ shape: 'unifont16-bw' }, 'E_FONT'],
    [{ shape: 'no-such-shape' }, 'E_SHAPE'],
  ]) {
    const session = Session.fromJsonl(text);
    const before = session.toBytes();
    await assert.rejects(
      session.compact({
        strategy: 'snapcompact',
        model: 'claude-opus-4-7',
        snapcompact,
        settings: { keepRecentTokens: 2_000 },
      }),
      (err) => {
        assert.equal(err.code, code, `${JSON.stringify(snapcompact)}: ${err.message}`);
        return true;
      },
    );
    assert.deepEqual(session.toBytes(), before);
  }
});
