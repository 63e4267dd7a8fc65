// Placeholder: RefCountedSignal lands with issue 2.
