; C++ tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier)] @name.definition.function)
    (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @name.definition.function))
    (reference_declarator
      (function_declarator declarator: (identifier) @name.definition.function))
  ])

(declaration
  declarator: (function_declarator declarator: (identifier) @name.definition.function))

; out-of-class definitions: `void ns::K::m() {}` -> method m
(function_declarator
  declarator: (qualified_identifier
    name: [
      (identifier) @name.definition.method
      (qualified_identifier name: (identifier) @name.definition.method)
      (qualified_identifier name: (qualified_identifier name: (identifier) @name.definition.method))
    ]))

(field_declaration_list
  [
    (field_declaration
      declarator: (function_declarator declarator: (field_identifier) @name.definition.method))
    (function_definition
      declarator: (function_declarator declarator: (field_identifier) @name.definition.method))
    (declaration
      declarator: (function_declarator declarator: (identifier) @name.definition.method))
    (template_declaration
      (function_definition
        declarator: (function_declarator declarator: (field_identifier) @name.definition.method)))
  ])

(class_specifier
  name: (type_identifier) @name.definition.class
  body: (_))

[
  (struct_specifier name: (type_identifier) @name.definition.struct body: (_))
  (union_specifier name: (type_identifier) @name.definition.struct body: (_))
]

(enum_specifier
  name: (type_identifier) @name.definition.enum
  body: (_))

[
  (type_definition declarator: (type_identifier) @name.definition.type)
  (alias_declaration name: (type_identifier) @name.definition.type)
]

(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name.definition.module)

(preproc_def
  name: (identifier) @name.definition.constant
  value: (_))

(preproc_function_def
  name: (identifier) @name.definition.function)

; ---- references
(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
    (qualified_identifier name: (identifier) @name.reference.call)
    (template_function name: (identifier) @name.reference.call)
  ])

(new_expression
  type: (type_identifier) @name.reference.class)

(type_identifier) @name.reference.type

; ---- imports: `"x.h"` -> x.h, `<vector>` kept with brackets
(preproc_include
  path: (_) @import)
