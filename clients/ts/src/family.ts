// Rollover families (docs/spec.md section 13.1): a tree added with a
// capacity whose values, once it is full, go on in members NAME/1,
// NAME/2, ... under the family's rule. `placeBlock` says where a server
// puts one block's values for a family (which member, from which leaf
// index), from the family's capacity and rule and its last member's size
// alone: what a wallet needs to know the tree number and index of its
// values, as Railgun's contract numbers them, before or without asking.
// `familyOf` reads a family's rule and members from `GET /v1/trees`
// (`CairnClient.trees`). Both are the server's rule transcribed; the tests
// hold them to a real server's answers.

import { CairnError, inputError } from "./errors.js";
import type { TreeInfo, TreesInfo } from "./client.js";

/** What a full member does with values that do not fit. */
export type RolloverRule = "none" | "split" | "whole-batch";

/** The rules by the names the server and the CLI give them. */
export const ROLLOVER_RULES: readonly RolloverRule[] = /* @__PURE__ */ Object.freeze(["none", "split", "whole-batch"] as RolloverRule[]);

/** A family's rule: the leaves one member holds, and what happens past them. */
export interface FamilyRule {
  readonly capacity: bigint;
  readonly rollover: RolloverRule;
  /** A member's size when it holds no value: 1 for an indexed tree (its guard leaf), else 0. */
  readonly emptySize: bigint;
}

/** A family's last member: its number (0 for the family's own tree) and size. */
export interface LastMember {
  readonly member: number;
  readonly size: bigint;
}

/** A family as a server lists it: its rule and the members that hold values (member 0 always), in member order. */
export interface FamilyInfo extends FamilyRule {
  readonly name: string;
  readonly members: readonly TreeInfo[];
  readonly last: LastMember;
}

/** One member's share of a block's values for a family. */
export interface Placement {
  /** `NAME` for member 0, else `NAME/K`. */
  readonly name: string;
  readonly member: number;
  /** The leaf index of the share's first value in that member. */
  readonly firstIndex: bigint;
  readonly count: bigint;
}

/** The name member `member` of family `name` goes by. */
export function memberName(name: string, member: number): string {
  return member === 0 ? name : `${name}/${member}`;
}

const refused = (message: string) => new CairnError("input", "InvalidArgument", message);

/**
 * Where a block's `count` values for the family `name` go, given its rule
 * and last member: the last member's share first (possibly empty: it still
 * records the block), then each new member's. Under "split" the last
 * member is filled exactly and the rest fills new members in turn; under
 * "whole-batch" values that do not fit go whole to the next member,
 * leaving the last one short, and more than one member holds are refused;
 * under "none" values that do not fit are refused. A refusal throws a
 * CairnError (InvalidArgument) saying why, as the server would refuse the
 * block.
 */
export function placeBlock(name: string, rule: FamilyRule, last: LastMember, count: bigint | number): Placement[] {
  const values = BigInt(count);
  if (values < 0n) throw inputError(`count ${values}: want at least 0`);
  if (!ROLLOVER_RULES.includes(rule.rollover)) throw inputError(`rollover ${JSON.stringify(rule.rollover)}: want one of ${ROLLOVER_RULES.join(", ")}`);
  const perMember = rule.capacity - rule.emptySize;
  if (perMember <= 0n) throw inputError(`capacity ${rule.capacity}: want more than the empty size ${rule.emptySize}`);
  if (last.size < rule.emptySize || last.size > rule.capacity) throw inputError(`last member size ${last.size}: want ${rule.emptySize}..=${rule.capacity}`);
  const room = rule.capacity - last.size;
  if (values > room && rule.rollover === "none") {
    throw refused(`tree ${memberName(name, last.member)} holds at most ${rule.capacity} leaves: it has ${last.size}, ${values} more do not fit`);
  }
  const whole = rule.rollover === "whole-batch" && values > room;
  if (whole && values > perMember) {
    throw refused(`a block of ${values} values for ${name}: under the whole-batch rule one member holds at most ${perMember}`);
  }
  const head = whole ? 0n : values < room ? values : room;
  const placed: Placement[] = [{ name: memberName(name, last.member), member: last.member, firstIndex: last.size, count: head }];
  let rest = values - head;
  let member = last.member;
  while (rest > 0n) {
    member += 1;
    const chunk = rest < perMember ? rest : perMember;
    placed.push({ name: memberName(name, member), member, firstIndex: rule.emptySize, count: chunk });
    rest -= chunk;
  }
  return placed;
}

/**
 * The family `name` of a server's trees (`CairnClient.trees()`): its rule
 * (from member 0's capacity and rollover) and its members that hold
 * values; an empty member past 0 (made for a block the database never
 * committed, or emptied by a rollback) is left out, as the server leaves
 * it out of the family. The last listed member is where the next block
 * goes first. A tree without a capacity is refused.
 */
export function familyOf(info: TreesInfo, name: string): FamilyInfo {
  const first = info.trees.find((t) => t.name === name);
  if (first === undefined) throw inputError(`no tree named ${JSON.stringify(name)}; the server lists ${info.trees.map((t) => t.name).join(", ")}`);
  if (first.capacity === null || first.rollover === null) throw inputError(`tree ${name} has no capacity: it is no family`);
  const emptySize = first.kind === "indexed" ? 1n : 0n;
  const numbered = info.trees
    .map((tree) => {
      if (tree === first) return { tree, member: 0 };
      const match = /^(.+)\/([1-9][0-9]*)$/.exec(tree.name);
      return match !== null && match[1] === name ? { tree, member: Number(match[2]) } : null;
    })
    .filter((m): m is { tree: TreeInfo; member: number } => m !== null && (m.member === 0 || m.tree.size > emptySize))
    .sort((a, b) => a.member - b.member);
  const last = numbered[numbered.length - 1]!;
  return Object.freeze({
    name,
    capacity: first.capacity,
    rollover: first.rollover,
    emptySize,
    members: Object.freeze(numbered.map((m) => m.tree)),
    last: Object.freeze({ member: last.member, size: last.tree.size }),
  });
}
