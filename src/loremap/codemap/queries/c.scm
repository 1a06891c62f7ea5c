; C tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @name.definition.function))
    (pointer_declarator
      declarator: (pointer_declarator
        declarator: (function_declarator declarator: (identifier) @name.definition.function)))
  ])

(declaration
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @name.definition.function))
  ])

[
  (struct_specifier name: (type_identifier) @name.definition.struct body: (_))
  (union_specifier name: (type_identifier) @name.definition.struct body: (_))
]

(enum_specifier
  name: (type_identifier) @name.definition.enum
  body: (_))

(type_definition
  declarator: (type_identifier) @name.definition.type)

(preproc_def
  name: (identifier) @name.definition.constant
  value: (_))

(preproc_function_def
  name: (identifier) @name.definition.function)

(translation_unit
  (declaration
    declarator: [
      (identifier) @name.definition.variable
      (pointer_declarator declarator: (identifier) @name.definition.variable)
      (init_declarator declarator: (identifier) @name.definition.variable)
      (init_declarator declarator: (pointer_declarator declarator: (identifier) @name.definition.variable))
      (init_declarator declarator: (array_declarator declarator: (identifier) @name.definition.variable))
    ]))

; ---- references
(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
  ])

(type_identifier) @name.reference.type

; ---- imports: `"x.h"` -> x.h, `<stdio.h>` kept with brackets
(preproc_include
  path: (_) @import)
