// Prints the constraint counts of LeanIMTInclusion(N, D) (or, with
// "absence", of IndexedAbsence(N, D)) as circom2 (its default --O1)
// reports them, for the arities and depths given:
//   node scripts/constraints.mjs "2,3,4,8,16" "1,2,3"
//   node scripts/constraints.mjs "2,4" "2,3,5" absence
// (each compile runs in wasm: N = 16 takes about a minute and 3 GB per level pair).
import { absence, compile, inclusion } from "./circom.mjs";

const arities = (process.argv[2] ?? "2,3,4,8,16").split(",").map(Number);
const depths = (process.argv[3] ?? "1,2,3").split(",").map(Number);
const template = process.argv[4] === "absence" ? absence : inclusion;
console.log("| N | D | non-linear | linear | wires | compile s |");
console.log("|---|---|---|---|---|---|");
for (const arity of arities) {
  for (const depth of depths) {
    const c = compile(`count_${template === absence ? "absence_" : ""}${arity}_${depth}`, template(arity, depth));
    console.log(`| ${arity} | ${depth} | ${c.nonLinear} | ${c.linear} | ${c.wires} | ${c.seconds.toFixed(1)} |`);
  }
}
