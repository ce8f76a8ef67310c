import QuarantineCLI

// The command line lives in QuarantineCLI (tests run its commands in process); this is its door.
// Synchronously first, on the main thread, before any thread of Swift's pool starts.
Quarantine.prepareProcess()
await Quarantine.runProgram()
