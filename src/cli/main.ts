console.log("cli ok", process.argv.slice(2));
