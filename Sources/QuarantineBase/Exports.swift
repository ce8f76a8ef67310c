// The base of every module: modes, paths, the pinned files, and (re-exported here) the one lock
// type and file names as bytes, so a module that imports QuarantineBase has all of it.
@_exported import Locking
@_exported import PathBytes
