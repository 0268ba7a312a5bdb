/**
 * Token-bucket rate limiting for outgoing requests.
 */
"use strict";

const { setTimeout: sleep } = require("node:timers/promises");

/** A bucket that refills at a fixed rate. */
class TokenBucket {
  /**
   * @param {number} capacity - the most tokens the bucket holds
   * @param {number} perSecond - tokens added each second
   */
  constructor(capacity, perSecond) {
    this.capacity = capacity;
    this.perSecond = perSecond;
    this.tokens = capacity;
    this.updated = Date.now();
  }

  /** Takes one token, waiting until one is available. */
  async take() {
    this.refill();
    while (this.tokens < 1) {
      await sleep(1000 / this.perSecond);

      this.refill();
    }
    this.tokens -= 1;
  }

  refill() {
    const now = Date.now();
    const added = ((now - this.updated) / 1000) * this.perSecond;
    this.tokens = Math.min(this.capacity, this.tokens + added);
    this.updated = now;
  }
}

/** Wraps `fn` so that each call first takes a token from `bucket`. */
const limited = (bucket, fn) => async (...args) => {
  await bucket.take();

  return fn(...args);
};

module.exports = { TokenBucket, limited };
