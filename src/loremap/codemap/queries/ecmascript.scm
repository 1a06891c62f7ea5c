; Tags shared by javascript, typescript and tsx (the TypeScript grammars extend JavaScript's).
; Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
[
  (class name: (_) @name.definition.class)
  (class_declaration name: (_) @name.definition.class)
]

[
  (function_declaration name: (identifier) @name.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function)
  (function_expression name: (identifier) @name.definition.function)
]

(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name.definition.method
  (#not-eq? @name.definition.method "constructor"))

(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)])

(assignment_expression
  left: (member_expression
    property: (property_identifier) @name.definition.function)
  right: [(arrow_function) (function_expression)])

(pair
  key: (property_identifier) @name.definition.method
  value: [(arrow_function) (function_expression)])

(program
  [
    (lexical_declaration (variable_declarator name: (identifier) @name.definition.variable))
    (variable_declaration (variable_declarator name: (identifier) @name.definition.variable))
    (export_statement
      declaration: [
        (lexical_declaration (variable_declarator name: (identifier) @name.definition.variable))
        (variable_declaration (variable_declarator name: (identifier) @name.definition.variable))
      ])
  ])

(program
  [
    (lexical_declaration
      "const"
      (variable_declarator name: (identifier) @name.definition.constant))
    (export_statement
      declaration: (lexical_declaration
        "const"
        (variable_declarator name: (identifier) @name.definition.constant)))
  ]
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

; ---- references
(call_expression
  function: [
    (identifier) @name.reference.call
    (member_expression property: (property_identifier) @name.reference.call)
  ]
  (#not-eq? @name.reference.call "require"))

(new_expression
  constructor: [
    (identifier) @name.reference.class
    (member_expression property: (property_identifier) @name.reference.class)
  ])

; ---- imports: the string literal as written
(import_statement source: (string) @import)

(export_statement source: (string) @import)

(call_expression
  function: (identifier) @_require
  arguments: (arguments . (string) @import .)
  (#eq? @_require "require"))

(call_expression
  function: (import)
  arguments: (arguments . (string) @import))
