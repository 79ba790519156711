// The child side of inChild: receives the arguments, runs one check, sends
// its notes or its error.
const [module, name] = process.argv.slice(2);

process.once("message", async (args) => {
  const notes = [];
  try {
    const checks = await import(`./checks/${module}.mjs`);
    await checks[name](args, (line) => notes.push(line));
    process.send({ ok: true, notes });
  } catch (error) {
    process.send({ ok: false, message: String(error?.message ?? error), stack: String(error?.stack ?? "") });
  }
});
process.send({ ready: true });
