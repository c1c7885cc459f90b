// How far the hub's clock is from the page's (Web/js/hub-clock.js): a revision's `time` is the hub's,
// "2 min ago" is worked out against the hub's clock now, from the pong's `time`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HubClock, LONGEST_USEFUL_ROUND_TRIP } from '../../Web/js/hub-clock.js';
import { relativeTime } from '../../Web/js/history-text.js';

test('the offset is the pong\'s time minus the middle of the round trip', () => {
  const clock = new HubClock();
  assert.equal(clock.hubTime(5_000), 5_000, 'no pong yet: this clock');
  clock.pingSent(10_000);
  clock.pong(10_050 - 180_000, 10_100); // the hub is three minutes behind this computer
  assert.equal(clock.offset, -180_000);
  assert.equal(clock.hubTime(20_000), 20_000 - 180_000);
});

test('pongs are matched to pings in order; one without time, or after a long round trip, changes nothing', () => {
  const clock = new HubClock();
  clock.pingSent(0);
  clock.pingSent(1_000);
  clock.pong(undefined, 100);         // a hub that does not say its time: the first ping's answer
  assert.equal(clock.offset, 0);
  clock.pong(61_050, 1_100);          // the second ping's: 60 s ahead
  assert.equal(clock.offset, 60_000);
  clock.pong(999_999, 2_000);         // no ping waits for it
  assert.equal(clock.offset, 60_000);
  clock.pingSent(10_000);
  clock.pong(500_000, 10_000 + LONGEST_USEFUL_ROUND_TRIP + 1);
  assert.equal(clock.offset, 60_000, 'a round trip over the limit says too little');
  clock.pingSent(30_000);
  clock.connectionLost();
  clock.pong(0, 30_010);
  assert.equal(clock.offset, 60_000, 'a ping of a lost connection is not answered by the next one');
});

test('a change made this instant on a hub whose clock is behind reads "just now", not "3 min ago"', () => {
  const clock = new HubClock();
  const local = 1_800_000_000_000;
  clock.pingSent(local);
  clock.pong(local - 180_000 + 20, local + 40);
  const madeNow = local + 60 - 180_000;   // the hub's time of a revision made just now
  assert.equal(relativeTime(madeNow, local + 100), '3 min ago', 'this clock alone is three minutes off');
  assert.equal(relativeTime(madeNow, clock.hubTime(local + 100)), 'just now');
});
