import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RETRY_SCHEDULE_SECONDS } from '../../src/delivery/index.ts';
import { createRetryPolicy, parseRetryAfter } from '../../src/delivery/retry-policy.ts';

const now = new Date('2026-11-29T12:00:00.000Z');
const DAY_MS = 86_400_000;

describe('retry schedule', () => {
  test('documented schedule, +-20% jitter, scaled by DELIVERY_RETRY_SCALE', () => {
    assert.deepEqual(RETRY_SCHEDULE_SECONDS, [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400, 86400]);
    const low = createRetryPolicy(1, () => 0);
    const high = createRetryPolicy(1, () => 1);
    assert.equal(low.delayAfter(1), 4000);
    assert.equal(high.delayAfter(1), 6000);
    assert.equal(low.delayAfter(2), 240_000);
    assert.equal(createRetryPolicy(0.001, () => 0.5).delayAfter(3), 1800);
  });

  test('attempts past the schedule reuse its last wait; attempt 0 counts as the first', () => {
    const middle = createRetryPolicy(1, () => 0.5);
    assert.equal(middle.delayAfter(10), DAY_MS);
    assert.equal(middle.delayAfter(99), DAY_MS);
    assert.equal(middle.delayAfter(0), 5000);
  });
});

describe('Retry-After', () => {
  test("a receiver's Retry-After is taken as given, not scaled, up to a day", () => {
    const scaled = createRetryPolicy(0.001, () => 0);
    assert.equal(scaled.delayAfter(1, 2000), 2000);
    assert.equal(scaled.delayAfter(1, 0), 0);
    assert.equal(scaled.delayAfter(1, DAY_MS), DAY_MS);
    assert.equal(scaled.delayAfter(1, 3 * DAY_MS), DAY_MS);
  });

  test('delay-seconds and HTTP dates are read; a date past is due now; anything else is ignored', () => {
    assert.equal(parseRetryAfter('7', now), 7000);
    assert.equal(parseRetryAfter(' 120 ', now), 120_000);
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 12:00:03 GMT', now), 3000);
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 11:59:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});
