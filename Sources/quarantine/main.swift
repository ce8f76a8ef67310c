import QuarantineCLI

// The command line lives in QuarantineCLI (tests run its commands in process); this is its door.
await Quarantine.runProgram()
