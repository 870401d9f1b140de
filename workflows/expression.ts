/**
 * The closed expression language of workflow guards and assignments.
 *
 * Grammar (no function calls, no member access beyond `data.<field>`, nothing evaluated as
 * JavaScript):
 *
 *   expr    := or
 *   or      := and ('||' and)*
 *   and     := not ('&&' not)*
 *   not     := '!' not | cmp
 *   cmp     := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum | 'in' '[' literal (',' literal)* ']')?
 *   sum     := unary (('+' | '-') unary)*
 *   unary   := '-' unary | primary
 *   primary := INT | STRING | 'true' | 'false' | IDENT | 'data' '.' IDENT | '(' expr ')'
 *
 * Types: int, bool, and enums. An enum compares (`==`, `!=`, `in`) with a string literal naming
 * one of its values, or with another enum of the same value list. `<`..`>=`, `+`, `-` take ints;
 * `&&`, `||`, `!` take bools. Identifiers name variables, `state` (the control state, an enum of
 * the workflow's states) and `data.<field>` (the current action's data).
 *
 * Expressions compile to closures over two Int32Arrays (the state vector and the data
 * valuation), with bools as 0/1 and enums as value indexes — the checker and the runtime call
 * the same closures.
 */

/** A parse or type error at a 0-based character offset of the expression text. */
export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'ExpressionError';
  }
}

/** A value type of the language. */
export type ExprType = { kind: 'int' } | { kind: 'bool' } | { kind: 'enum'; values: readonly string[] };

/** Where an identifier lives: slot `index` of the state vector (`v`) or of the data valuation (`d`). */
export interface Symbol {
  where: 'v' | 'd';
  index: number;
  type: ExprType;
}

/** A compiled expression: bools are 0/1, enums are value indexes, ints are themselves. */
export type Compiled = (v: Int32Array, d: Int32Array) => number;

type Node =
  | { k: 'int'; value: number; at: number }
  | { k: 'bool'; value: boolean; at: number }
  | { k: 'str'; value: string; at: number }
  | { k: 'id'; name: string; at: number }
  | { k: 'not'; e: Node; at: number }
  | { k: 'neg'; e: Node; at: number }
  | { k: 'bin'; op: string; a: Node; b: Node; at: number }
  | { k: 'in'; e: Node; list: Node[]; at: number };

interface Token {
  t: 'num' | 'str' | 'id' | 'op' | 'end';
  s: string;
  at: number;
}

const OPS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '+', '-', '(', ')', '[', ']', ',', '.'];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c >= '0' && c <= '9') {
      const m = /^[0-9]+/.exec(src.slice(i))![0];
      out.push({ t: 'num', s: m, at: i });
      i += m.length;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))![0];
      out.push({ t: 'id', s: m, at: i });
      i += m.length;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new ExpressionError(`unterminated string starting with ${c}`, i);
      out.push({ t: 'str', s: src.slice(i + 1, end), at: i });
      i = end + 1;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExpressionError(`unexpected character ${JSON.stringify(c)}`, i);
    out.push({ t: 'op', s: op, at: i });
    i += op.length;
  }
  out.push({ t: 'end', s: '', at: src.length });
  return out;
}

/** Parse `src` into a syntax tree. @throws ExpressionError with the offset of the fault. */
function parse(src: string): Node {
  const toks = tokenize(src);
  let p = 0;
  const peek = (): Token => toks[p]!;
  const take = (): Token => toks[p++]!;
  const isOp = (s: string): boolean => peek().t === 'op' && peek().s === s;
  const expect = (s: string): Token => {
    const tok = peek();
    if (tok.t !== 'op' || tok.s !== s) throw new ExpressionError(`expected "${s}" but found ${describe(tok)}`, tok.at);
    return take();
  };
  const describe = (tok: Token): string => (tok.t === 'end' ? 'the end of the expression' : JSON.stringify(tok.s));

  const primary = (): Node => {
    const tok = take();
    if (tok.t === 'num') return { k: 'int', value: Number(tok.s), at: tok.at };
    if (tok.t === 'str') return { k: 'str', value: tok.s, at: tok.at };
    if (tok.t === 'id') {
      if (tok.s === 'true' || tok.s === 'false') return { k: 'bool', value: tok.s === 'true', at: tok.at };
      if (tok.s === 'data') {
        expect('.');
        const f = take();
        if (f.t !== 'id') throw new ExpressionError(`expected a data field name after "data." but found ${describe(f)}`, f.at);
        return { k: 'id', name: `data.${f.s}`, at: tok.at };
      }
      if (tok.s === 'in') throw new ExpressionError('unexpected "in"', tok.at);
      return { k: 'id', name: tok.s, at: tok.at };
    }
    if (tok.t === 'op' && tok.s === '(') {
      const e = or();
      expect(')');
      return e;
    }
    throw new ExpressionError(`expected a value but found ${describe(tok)}`, tok.at);
  };
  const unary = (): Node => {
    if (isOp('-')) {
      const at = take().at;
      return { k: 'neg', e: unary(), at };
    }
    return primary();
  };
  const sum = (): Node => {
    let a = unary();
    while (isOp('+') || isOp('-')) {
      const op = take();
      a = { k: 'bin', op: op.s, a, b: unary(), at: op.at };
    }
    return a;
  };
  const cmp = (): Node => {
    const a = sum();
    const tok = peek();
    if (tok.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(tok.s)) {
      take();
      return { k: 'bin', op: tok.s, a, b: sum(), at: tok.at };
    }
    if (tok.t === 'id' && tok.s === 'in') {
      take();
      expect('[');
      const list: Node[] = [];
      if (!isOp(']')) {
        for (;;) {
          const item = unary();
          if (item.k === 'neg' && item.e.k === 'int') list.push({ k: 'int', value: -item.e.value, at: item.at });
          else if (item.k === 'int' || item.k === 'str' || item.k === 'bool') list.push(item);
          else if (item.k === 'id') list.push({ k: 'str', value: item.name, at: item.at });
          else throw new ExpressionError('a list after "in" holds literals only', item.at);
          if (isOp(',')) {
            take();
            continue;
          }
          break;
        }
      }
      expect(']');
      return { k: 'in', e: a, list, at: tok.at };
    }
    return a;
  };
  const not = (): Node => {
    if (isOp('!')) {
      const at = take().at;
      return { k: 'not', e: not(), at };
    }
    return cmp();
  };
  const and = (): Node => {
    let a = not();
    while (isOp('&&')) {
      const at = take().at;
      a = { k: 'bin', op: '&&', a, b: not(), at };
    }
    return a;
  };
  const or = (): Node => {
    let a = and();
    while (isOp('||')) {
      const at = take().at;
      a = { k: 'bin', op: '||', a, b: and(), at };
    }
    return a;
  };
  const e = or();
  if (peek().t !== 'end') throw new ExpressionError(`unexpected ${describe(peek())} after a complete expression`, peek().at);
  return e;
}

function typeName(t: ExprType | 'str'): string {
  if (t === 'str') return 'a string';
  if (t.kind === 'enum') return `an enum (${t.values.join(' | ')})`;
  return `an ${t.kind === 'int' ? 'int' : 'bool'}`.replace('an bool', 'a bool');
}

interface Typed {
  type: ExprType | 'str';
  fn: Compiled | null;
  /** For string literals: the text, resolved against an enum by the comparison. */
  str?: string;
  at: number;
}

const sameValues = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Parse, type-check and compile `src`.
 *
 * @param src      the expression text.
 * @param resolve  maps an identifier (`name` or `data.field`) to its slot and type, or null if unknown.
 * @param expected the type the result must have (`bool` for guards; the variable's type for `set`).
 * @returns a closure `(v, d) => number`.
 * @throws ExpressionError (with the character offset) on a syntax, name or type error.
 */
export function compileExpression(src: string, resolve: (name: string) => Symbol | null, expected: ExprType): Compiled {
  const tree = parse(src);
  const typed = check(tree, resolve);
  return coerce(typed, expected);
}

function coerce(x: Typed, expected: ExprType): Compiled {
  if (x.type === 'str') {
    if (expected.kind === 'enum') {
      const idx = expected.values.indexOf(x.str!);
      if (idx < 0) throw new ExpressionError(`"${x.str}" is not one of ${expected.values.join(', ')}`, x.at);
      return () => idx;
    }
    throw new ExpressionError(`expected ${typeName(expected)} but found a string`, x.at);
  }
  if (x.type.kind === 'enum' && expected.kind === 'enum' && !sameValues(x.type.values, expected.values)) {
    const map = enumMap(x.type.values, expected.values);
    if (!map) throw new ExpressionError(`expected ${typeName(expected)} but found ${typeName(x.type)} (its values are not all among the expected ones)`, x.at);
    const f = x.fn!;
    return (v, d) => map[f(v, d)]!;
  }
  if (x.type.kind !== expected.kind) {
    throw new ExpressionError(`expected ${typeName(expected)} but found ${typeName(x.type)}`, x.at);
  }
  return x.fn!;
}

/** Index map from enum `from` into enum `to` when every value of `from` is in `to`; else null. */
export function enumMap(from: readonly string[], to: readonly string[]): Int32Array | null {
  const map = new Int32Array(from.length);
  for (let i = 0; i < from.length; i++) {
    const j = to.indexOf(from[i]!);
    if (j < 0) return null;
    map[i] = j;
  }
  return map;
}

/** The common type of two comparison operands: a wider enum absorbs a narrower one. */
function unify(a: ExprType | 'str', b: ExprType | 'str'): ExprType {
  if (a === 'str') return b as ExprType;
  if (b === 'str') return a;
  if (a.kind === 'enum' && b.kind === 'enum' && !sameValues(a.values, b.values)) return enumMap(a.values, b.values) ? b : a;
  return a;
}

function check(n: Node, resolve: (name: string) => Symbol | null): Typed {
  switch (n.k) {
    case 'int': {
      const value = n.value;
      return { type: { kind: 'int' }, fn: () => value, at: n.at };
    }
    case 'bool': {
      const value = n.value ? 1 : 0;
      return { type: { kind: 'bool' }, fn: () => value, at: n.at };
    }
    case 'str':
      return { type: 'str', fn: null, str: n.value, at: n.at };
    case 'id': {
      const sym = resolve(n.name);
      if (!sym) throw new ExpressionError(`unknown name "${n.name}" (not a variable, "state" or a data field of this action)`, n.at);
      const i = sym.index;
      return { type: sym.type, fn: sym.where === 'v' ? (v) => v[i]! : (_v, d) => d[i]!, at: n.at };
    }
    case 'not': {
      const e = coerce(check(n.e, resolve), { kind: 'bool' });
      return { type: { kind: 'bool' }, fn: (v, d) => (e(v, d) ? 0 : 1), at: n.at };
    }
    case 'neg': {
      const e = coerce(check(n.e, resolve), { kind: 'int' });
      return { type: { kind: 'int' }, fn: (v, d) => -e(v, d), at: n.at };
    }
    case 'in': {
      const e = check(n.e, resolve);
      if (e.type === 'str') throw new ExpressionError('the left side of "in" must be a variable or an expression, not a string', e.at);
      const t = e.type;
      const codes = n.list.map((item) => {
        const lit = check(item, resolve);
        return coerce(lit, t)(new Int32Array(0), new Int32Array(0));
      });
      const f = e.fn!;
      const set = new Set(codes);
      if (codes.length <= 4) {
        const [c0 = NaN, c1 = NaN, c2 = NaN, c3 = NaN] = codes;
        return {
          type: { kind: 'bool' },
          fn: (v, d) => {
            const x = f(v, d);
            return x === c0 || x === c1 || x === c2 || x === c3 ? 1 : 0;
          },
          at: n.at,
        };
      }
      return { type: { kind: 'bool' }, fn: (v, d) => (set.has(f(v, d)) ? 1 : 0), at: n.at };
    }
    case 'bin':
      return checkBinary(n, resolve);
  }
}

function checkBinary(n: Extract<Node, { k: 'bin' }>, resolve: (name: string) => Symbol | null): Typed {
  const bool: ExprType = { kind: 'bool' };
  const int: ExprType = { kind: 'int' };
  if (n.op === '&&' || n.op === '||') {
    const a = coerce(check(n.a, resolve), bool);
    const b = coerce(check(n.b, resolve), bool);
    return { type: bool, fn: n.op === '&&' ? (v, d) => (a(v, d) === 0 ? 0 : b(v, d)) : (v, d) => (a(v, d) !== 0 ? 1 : b(v, d)), at: n.at };
  }
  if (n.op === '+' || n.op === '-') {
    const a = coerce(check(n.a, resolve), int);
    const b = coerce(check(n.b, resolve), int);
    return { type: int, fn: n.op === '+' ? (v, d) => a(v, d) + b(v, d) : (v, d) => a(v, d) - b(v, d), at: n.at };
  }
  const ta = check(n.a, resolve);
  const tb = check(n.b, resolve);
  let a: Compiled;
  let b: Compiled;
  let lhsRaw = ta.type !== 'str';
  if (n.op === '==' || n.op === '!=') {
    if (ta.type === 'str' && tb.type === 'str') throw new ExpressionError('comparing two string literals is always constant', n.at);
    const t = unify(ta.type, tb.type);
    if (ta.type !== 'str' && ta.type.kind === 'enum' && t.kind === 'enum' && !sameValues(ta.type.values, t.values)) lhsRaw = false;
    a = coerce(ta, t);
    b = coerce(tb, t);
  } else {
    a = coerce(ta, int);
    b = coerce(tb, int);
  }
  // Constant right operand (the common `x == 'v'` / `x < 3`) gets a specialised closure.
  const probe = new Int32Array(0);
  const rhsConst = n.b.k === 'int' || n.b.k === 'str' || n.b.k === 'bool' ? b(probe, probe) : null;
  let fn: Compiled;
  // `variable OP constant`, the commonest guard atom, reads the slot directly (no nested closure).
  const lhsSym = n.a.k === 'id' && lhsRaw ? resolve(n.a.name) : null;
  if (rhsConst !== null && lhsSym && lhsSym.where === 'v') {
    const c = rhsConst;
    const i = lhsSym.index;
    switch (n.op) {
      case '==':
        return { type: bool, fn: (v) => (v[i] === c ? 1 : 0), at: n.at };
      case '!=':
        return { type: bool, fn: (v) => (v[i] !== c ? 1 : 0), at: n.at };
      case '<':
        return { type: bool, fn: (v) => (v[i]! < c ? 1 : 0), at: n.at };
      case '<=':
        return { type: bool, fn: (v) => (v[i]! <= c ? 1 : 0), at: n.at };
      case '>':
        return { type: bool, fn: (v) => (v[i]! > c ? 1 : 0), at: n.at };
      default:
        return { type: bool, fn: (v) => (v[i]! >= c ? 1 : 0), at: n.at };
    }
  }
  if (rhsConst !== null) {
    const c = rhsConst;
    switch (n.op) {
      case '==':
        fn = (v, d) => (a(v, d) === c ? 1 : 0);
        break;
      case '!=':
        fn = (v, d) => (a(v, d) !== c ? 1 : 0);
        break;
      case '<':
        fn = (v, d) => (a(v, d) < c ? 1 : 0);
        break;
      case '<=':
        fn = (v, d) => (a(v, d) <= c ? 1 : 0);
        break;
      case '>':
        fn = (v, d) => (a(v, d) > c ? 1 : 0);
        break;
      default:
        fn = (v, d) => (a(v, d) >= c ? 1 : 0);
    }
  } else {
    switch (n.op) {
      case '==':
        fn = (v, d) => (a(v, d) === b(v, d) ? 1 : 0);
        break;
      case '!=':
        fn = (v, d) => (a(v, d) !== b(v, d) ? 1 : 0);
        break;
      case '<':
        fn = (v, d) => (a(v, d) < b(v, d) ? 1 : 0);
        break;
      case '<=':
        fn = (v, d) => (a(v, d) <= b(v, d) ? 1 : 0);
        break;
      case '>':
        fn = (v, d) => (a(v, d) > b(v, d) ? 1 : 0);
        break;
      default:
        fn = (v, d) => (a(v, d) >= b(v, d) ? 1 : 0);
    }
  }
  return { type: bool, fn, at: n.at };
}

/**
 * Parse and type-check `src` and render it in Promela syntax, with identifiers mapped by `name`
 * and enum literals by their index. Used by the Promela export so spin checks the same guards.
 * @throws ExpressionError as {@link compileExpression}.
 */
export function expressionToPromela(src: string, resolve: (name: string) => Symbol | null, rename: (name: string) => string, expected: ExprType | null = null): string {
  const tree = parse(src);
  check(tree, resolve); // same type rules as the checker
  const render = (n: Node, hint: ExprType | null): string => {
    switch (n.k) {
      case 'int':
        return String(n.value);
      case 'bool':
        return n.value ? '1' : '0';
      case 'str': {
        if (hint?.kind !== 'enum') throw new ExpressionError('a string literal needs an enum to compare with', n.at);
        return String(hint.values.indexOf(n.value));
      }
      case 'id': {
        const own = check(n, resolve).type;
        const name = rename(n.name);
        if (hint?.kind === 'enum' && own !== 'str' && own.kind === 'enum' && !sameValues(own.values, hint.values)) {
          const map = enumMap(own.values, hint.values);
          if (!map) throw new ExpressionError('incompatible enums', n.at);
          if (/^-?[0-9]+$/.test(name)) return String(map[Number(name)]);
          return Array.from(map).reduceRight((acc, to, from) => (acc === '' ? String(to) : `(${name} == ${from} -> ${to} : ${acc})`), '');
        }
        return name;
      }
      case 'not':
        return `!(${render(n.e, null)})`;
      case 'neg':
        return `-(${render(n.e, null)})`;
      case 'in': {
        const t = typeOf(n.e);
        return `(${n.list.map((item) => `(${render(n.e, null)}) == ${render(item, t)}`).join(' || ')}${n.list.length ? '' : '0'})`;
      }
      case 'bin': {
        const ta = check(n.a, resolve).type;
        const tb = check(n.b, resolve).type;
        const t = n.op === '==' || n.op === '!=' ? unify(ta, tb) : null;
        return `(${render(n.a, t)} ${n.op} ${render(n.b, t)})`;
      }
    }
  };
  const typeOf = (n: Node): ExprType | null => {
    const t = check(n, resolve).type;
    return t === 'str' ? null : t;
  };
  return render(tree, expected);
}

/** An expression error located in a field of the workflow (thrown by the model compiler). */
export class ExpressionInFieldError extends Error {
  constructor(
    readonly path: string,
    readonly source: string,
    readonly offset: number,
    message: string,
  ) {
    super(message);
    this.name = 'ExpressionInFieldError';
  }

  static wrap(path: string, source: string, error: unknown): unknown {
    if (error instanceof ExpressionError) return new ExpressionInFieldError(path, source, error.offset, error.message);
    return error;
  }
}

/**
 * The top-level conjuncts of a guard that pin a state slot to a set of values (`x == 'v'`,
 * `x == 3`, `x in ['a', 'b']`, in any `&&` chain). Each is a necessary condition for the guard,
 * which lets the checker skip actions that cannot fire in a state without evaluating them.
 * @throws ExpressionError as {@link compileExpression}.
 */
export function guardAtoms(src: string, resolve: (name: string) => Symbol | null): Array<{ slot: number; values: number[] }> {
  const tree = parse(src);
  const out: Array<{ slot: number; values: number[] }> = [];
  const none = new Int32Array(0);
  const visit = (n: Node): void => {
    if (n.k === 'bin' && n.op === '&&') {
      visit(n.a);
      visit(n.b);
      return;
    }
    const lhs = n.k === 'bin' && n.op === '==' ? n.a : n.k === 'in' ? n.e : null;
    if (lhs?.k !== 'id') return;
    const sym = resolve(lhs.name);
    if (sym?.where !== 'v') return;
    const lits = n.k === 'in' ? n.list : n.k === 'bin' ? [n.b] : [];
    const values: number[] = [];
    for (const lit of lits) {
      if (lit.k !== 'int' && lit.k !== 'str' && lit.k !== 'bool') return;
      values.push(coerce(check(lit, resolve), sym.type)(none, none));
    }
    out.push({ slot: sym.index, values });
  };
  visit(tree);
  return out;
}
