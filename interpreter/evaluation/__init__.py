"""AST to marked output: the evaluator (a visitor), its statement handlers, the
closures compiled from the AST (compiling/), scopes, output, expressions and
calls, template composition, macros and autoescaping."""
