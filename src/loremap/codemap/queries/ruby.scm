; Ruby tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import, @import.relative.

; ---- definitions
(class
  name: [
    (constant) @name.definition.class
    (scope_resolution name: (constant) @name.definition.class)
  ])

(module
  name: [
    (constant) @name.definition.module
    (scope_resolution name: (constant) @name.definition.module)
  ])

(method
  name: (_) @name.definition.function)

[
  (class (body_statement (method name: (_) @name.definition.method)))
  (module (body_statement (method name: (_) @name.definition.method)))
  (singleton_class (body_statement (method name: (_) @name.definition.method)))
  (singleton_method name: (_) @name.definition.method)
]

(alias
  name: (_) @name.definition.method)

(assignment
  left: (constant) @name.definition.constant)

; ---- references
(call
  method: (identifier) @name.reference.call
  (#not-match? @name.reference.call "^(require|require_relative|load)$"))

(call
  receiver: [
    (constant) @name.reference.class
    (scope_resolution name: (constant) @name.reference.class)
  ])

(superclass
  [
    (constant) @name.reference.class
    (scope_resolution name: (constant) @name.reference.class)
  ])

(argument_list
  [
    (constant) @name.reference.class
    (scope_resolution name: (constant) @name.reference.class)
  ])

; ---- imports: `require 'x'` -> x, `require_relative 'y'` -> ./y (literal strings only)
(call
  method: (identifier) @_require
  arguments: (argument_list . (string . (string_content) @import .))
  (#eq? @_require "require"))

(call
  method: (identifier) @_require
  arguments: (argument_list . (string . (string_content) @import.relative .))
  (#eq? @_require "require_relative"))
