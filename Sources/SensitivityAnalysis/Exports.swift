// AnalysisMode, the pinned files and the paths are part of this library's API: they come with it.
@_exported import QuarantineBase
