/**
 * The checker's state storage, apart from its search (as TLC keeps its fingerprint set and trace
 * apart from `ModelChecker`): a bit-packed visited set of product states numbered in insertion
 * (BFS) order with parent pointers, and the reachable graph's forward edges in CSR form, plus the
 * graph algorithms the verdict needs (reverse edges, Kahn's topological order, a cycle, the move
 * between two states). Used by `checker.ts` only.
 */

/** The shape of a product state: the workflow's slots (value ranges), then one slot per monitor. */
export interface StateLayout {
  slots: ReadonlyArray<{ min: number; max: number }>;
  monitors: ReadonlyArray<{ size: number }>;
}

/** Packed visited set, BFS order, parent pointers and the forward edge list (CSR). */
export interface StateSpace {
  nslots: number;
  width: number;
  count: number;
  parent: Int32Array;
  parentMove: Int32Array;
  insert(vec: Int32Array): number;
  decode(i: number, out: Int32Array): void;
  control(i: number): number;
  beginEdges(i: number): void;
  addEdge(to: number, from: number, move: number): void;
  endEdges(expanded: number): void;
  reverse(): { start: Int32Array; to: Int32Array };
  /** Kahn's algorithm: `order` holds the peeled states; `complete` when the graph is acyclic; `indeg` > 0 marks states on or after a cycle. */
  topologicalOrder(): { order: Int32Array; complete: boolean; indeg: Int32Array };
  anySuccessor(state: number, mark: Uint8Array): boolean;
  findCycle(back: { start: Int32Array; to: Int32Array }, indeg: Int32Array): number[];
  moveBetween(from: number, to: number): number;
}

/**
 * Bit-packed state storage: each slot gets ceil(log2(size)) bits inside 32-bit words (a slot
 * never straddles words); an open-addressing hash table of state indexes; BFS order = index order.
 * A state vector is `width` = slots + monitors int32 values, slot `k` within `[min, max]`, monitor
 * `m` within `[0, size)`. Pure in-memory; grows by doubling; never throws for a well-formed vector.
 */
export function createStateSpace(model: StateLayout): StateSpace {
  const nslots = model.slots.length;
  const sizes = [...model.slots.map((s) => s.max - s.min + 1), ...model.monitors.map((m) => m.size)];
  const mins = [...model.slots.map((s) => s.min), ...model.monitors.map(() => 0)];
  const width = sizes.length;
  const wordOf = new Int32Array(width);
  const shiftOf = new Int32Array(width);
  const maskOf = new Int32Array(width);
  const minOf = Int32Array.from(mins);
  let word = 0;
  let used = 0;
  sizes.forEach((size, s) => {
    const bits = Math.max(1, Math.ceil(Math.log2(size)));
    if (used + bits > 32) {
      word++;
      used = 0;
    }
    wordOf[s] = word;
    shiftOf[s] = used;
    maskOf[s] = bits >= 32 ? -1 : (1 << bits) - 1;
    used += bits;
  });
  const kw = word + 1;
  let cap = 1 << 12;
  let keys = new Int32Array(cap * kw);
  let parent = new Int32Array(cap);
  let parentMove = new Int32Array(cap);
  let edgeStart = new Int32Array(cap + 1);
  let edgeTo = new Int32Array(1 << 14);
  let edgeMoves = new Int32Array(1 << 14);
  let edgeCount = 0;
  // Open addressing; each entry is [state index + 1, packed key words...] so that a probe reads
  // one place in memory.
  const stride = kw + 1;
  let tableBits = 14;
  let table = new Int32Array((1 << tableBits) * stride);
  let tableMask = (1 << tableBits) - 1;
  const packed = new Int32Array(kw);
  let count = 0;
  let lastInsertNew = false;

  const hashOf = (src: Int32Array, base: number): number => {
    let h = 0x811c9dc5 | 0;
    for (let w = 0; w < kw; w++) h = Math.imul(h ^ src[base + w]!, 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    return h;
  };
  const growTable = (): void => {
    tableBits++;
    table = new Int32Array((1 << tableBits) * stride);
    tableMask = (1 << tableBits) - 1;
    for (let i = 0; i < count; i++) {
      let h = hashOf(keys, i * kw) & tableMask;
      while (table[h * stride] !== 0) h = (h + 1) & tableMask;
      const at = h * stride;
      table[at] = i + 1;
      for (let w = 0; w < kw; w++) table[at + 1 + w] = keys[i * kw + w]!;
    }
  };
  const growStates = (): void => {
    cap *= 2;
    const k2 = new Int32Array(cap * kw);
    k2.set(keys);
    keys = k2;
    const p2 = new Int32Array(cap);
    p2.set(parent);
    parent = p2;
    const m2 = new Int32Array(cap);
    m2.set(parentMove);
    parentMove = m2;
    const e2 = new Int32Array(cap + 1);
    e2.set(edgeStart);
    edgeStart = e2;
    space.parent = parent;
    space.parentMove = parentMove;
  };

  const space: StateSpace = {
    nslots,
    width,
    count: 0,
    parent,
    parentMove,
    insert(vec) {
      for (let w = 0; w < kw; w++) packed[w] = 0;
      for (let s = 0; s < width; s++) {
        const w = wordOf[s]!;
        packed[w] = packed[w]! | ((vec[s]! - minOf[s]!) << shiftOf[s]!);
      }
      let h = hashOf(packed, 0) & tableMask;
      for (;;) {
        const at = h * stride;
        const slot = table[at]!;
        if (slot === 0) break;
        let eq = true;
        for (let w = 0; w < kw; w++) {
          if (table[at + 1 + w] !== packed[w]) {
            eq = false;
            break;
          }
        }
        if (eq) {
          lastInsertNew = false;
          return slot - 1;
        }
        h = (h + 1) & tableMask;
      }
      if (count === cap) growStates();
      const idx = count++;
      keys.set(packed, idx * kw);
      const at = h * stride;
      table[at] = idx + 1;
      for (let w = 0; w < kw; w++) table[at + 1 + w] = packed[w]!;
      space.count = count;
      lastInsertNew = true;
      if (count * 2 > tableMask + 1) growTable();
      return idx;
    },
    decode(i, out) {
      const base = i * kw;
      for (let s = 0; s < width; s++) out[s] = ((keys[base + wordOf[s]!]! >>> shiftOf[s]!) & maskOf[s]!) + minOf[s]!;
    },
    control(i) {
      return ((keys[i * kw + wordOf[0]!]! >>> shiftOf[0]!) & maskOf[0]!) + minOf[0]!;
    },
    beginEdges(i) {
      edgeStart[i] = edgeCount;
    },
    addEdge(to, from, move) {
      if (lastInsertNew) {
        parent[to] = from;
        parentMove[to] = move;
      }
      if (edgeCount === edgeTo.length) {
        const e2 = new Int32Array(edgeTo.length * 2);
        e2.set(edgeTo);
        edgeTo = e2;
        const m2 = new Int32Array(edgeMoves.length * 2);
        m2.set(edgeMoves);
        edgeMoves = m2;
      }
      edgeMoves[edgeCount] = move;
      edgeTo[edgeCount++] = to;
    },
    endEdges(expanded) {
      // States never expanded (after a cap) get empty edge lists.
      for (let i = expanded; i <= count; i++) edgeStart[i] = edgeCount;
    },
    reverse() {
      const start = new Int32Array(count + 1);
      for (let e = 0; e < edgeCount; e++) start[edgeTo[e]! + 1]!++;
      for (let i = 0; i < count; i++) start[i + 1] = start[i + 1]! + start[i]!;
      const fill = start.slice(0, count);
      const to = new Int32Array(edgeCount);
      for (let s = 0; s < count; s++) {
        for (let e = edgeStart[s]!; e < edgeStart[s + 1]!; e++) to[fill[edgeTo[e]!]!++] = s;
      }
      return { start, to };
    },
    topologicalOrder() {
      const indeg = new Int32Array(count);
      for (let e = 0; e < edgeCount; e++) indeg[edgeTo[e]!]!++;
      const order = new Int32Array(count);
      let qh = 0;
      let qt = 0;
      for (let i = 0; i < count; i++) if (indeg[i] === 0) order[qt++] = i;
      while (qh < qt) {
        const st = order[qh++]!;
        for (let e = edgeStart[st]!; e < edgeStart[st + 1]!; e++) {
          const t = edgeTo[e]!;
          if (--indeg[t]! === 0) order[qt++] = t;
        }
      }
      return { order, complete: qt === count, indeg };
    },
    anySuccessor(st, mark) {
      for (let e = edgeStart[st]!; e < edgeStart[st + 1]!; e++) if (mark[edgeTo[e]!] === 1) return true;
      return false;
    },
    findCycle(back, indeg) {
      // Walk backwards through remaining states until one repeats: that is a cycle.
      let s = 0;
      while (indeg[s] === 0) s++;
      const seenAt = new Map<number, number>();
      const walk: number[] = [];
      while (!seenAt.has(s)) {
        seenAt.set(s, walk.length);
        walk.push(s);
        let p = -1;
        for (let e = back.start[s]!; e < back.start[s + 1]!; e++) {
          if (indeg[back.to[e]!]! > 0) {
            p = back.to[e]!;
            break;
          }
        }
        s = p;
      }
      const cycle = walk.slice(seenAt.get(s)!).reverse(); // forward order
      // Rotate so that the shallowest (lowest BFS index) state comes first.
      let best = 0;
      cycle.forEach((x, i) => {
        if (x < cycle[best]!) best = i;
      });
      return [...cycle.slice(best), ...cycle.slice(0, best)];
    },
    moveBetween(from, to) {
      for (let e = edgeStart[from]!; e < edgeStart[from + 1]!; e++) {
        if (edgeTo[e] === to) return edgeMoves[e]!;
      }
      throw new Error(`internal: no edge ${from} → ${to}`);
    },
  };
  return space;
}
