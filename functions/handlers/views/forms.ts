import { attrs, html, type SafeHtml } from '#core/html';

// Form pieces in the GOV.UK Design System's manner: every input has a label and may have a hint,
// a field in error says so next to it and in the error summary at the top of the page, whose links
// move the focus to the field.

/** A field in error: the id of the element to focus (the first check box of a group) and why. */
export interface FieldError {
  field: string;
  message: string;
}

export function errorSummary(errors: readonly FieldError[]): SafeHtml {
  if (!errors.length) return html``;
  return html`<div class="error-summary" role="alert" tabindex="-1" data-autofocus aria-labelledby="error-summary-title">
<h2 id="error-summary-title" class="error-summary__title">There is a problem</h2>
<ul class="error-summary__list">${errors.map((e) => html`<li><a href="#${e.field}">${e.message}</a></li>`)}</ul>
</div>`;
}

const errorOf = (errors: readonly FieldError[], field: string) => errors.find((e) => e.field === field);

function fieldError(id: string, error: FieldError | undefined): SafeHtml {
  return error
    ? html`<p class="field-error" id="${id}-error"><span class="visually-hidden">Error:</span> ${error.message}</p>`
    : html``;
}

const describedBy = (id: string, hint: string | undefined, error: FieldError | undefined) =>
  [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

/** A refused act's reason at the top of the page it re-renders. */
export function refusal(message: string | null | undefined): SafeHtml {
  if (!message) return html``;
  return html`<div class="error-summary" role="alert" tabindex="-1" data-autofocus aria-labelledby="refusal-title">
<h2 id="refusal-title" class="error-summary__title">That could not be done</h2>
<p>${message}</p>
</div>`;
}

export interface InputOptions {
  id: string;
  name: string;
  label: string;
  hint?: string;
  value?: string | undefined;
  type?: 'text' | 'email' | 'password';
  autocomplete?: string;
  required?: boolean;
  maxlength?: number;
  errors?: readonly FieldError[];
}

export function textInput(o: InputOptions): SafeHtml {
  const error = errorOf(o.errors ?? [], o.id);
  return html`<div class="field${error ? ' field--error' : ''}">
<label class="label" for="${o.id}">${o.label}</label>
${o.hint && html`<p class="hint" id="${o.id}-hint">${o.hint}</p>`}
${fieldError(o.id, error)}
<input class="input"${attrs({
    id: o.id,
    name: o.name,
    type: o.type ?? 'text',
    value: o.value,
    autocomplete: o.autocomplete ?? 'off',
    spellcheck: 'false',
    required: o.required,
    maxlength: o.maxlength,
    'aria-describedby': describedBy(o.id, o.hint, error),
    'aria-invalid': error ? 'true' : undefined,
  })}>
</div>`;
}

export function textArea(o: Omit<InputOptions, 'type'> & { rows?: number; readonly?: boolean }): SafeHtml {
  const error = errorOf(o.errors ?? [], o.id);
  return html`<div class="field${error ? ' field--error' : ''}">
<label class="label" for="${o.id}">${o.label}</label>
${o.hint && html`<p class="hint" id="${o.id}-hint">${o.hint}</p>`}
${fieldError(o.id, error)}
<textarea class="textarea"${attrs({
    id: o.id,
    name: o.name,
    rows: o.rows ?? 4,
    readonly: o.readonly,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': describedBy(o.id, o.hint, error),
    'aria-invalid': error ? 'true' : undefined,
  })}>${o.value ?? ''}</textarea>
</div>`;
}

export interface Choice {
  value: string;
  label: string;
  hint?: string;
  checked?: boolean;
}

/**
 * Check boxes (several values under one name) or radios (one) in a fieldset whose legend names the
 * question. The group's error is keyed by its first input's id, which the summary links to.
 */
export function choices(o: {
  kind: 'checkbox' | 'radio';
  idPrefix: string;
  name: string;
  legend: string;
  hint?: string;
  items: readonly Choice[];
  errors?: readonly FieldError[];
  /** Lay the choices out side by side where there is room (short labels). */
  inline?: boolean;
}): SafeHtml {
  const ids = o.items.map((item) => `${o.idPrefix}-${item.value.replace(/[^a-z0-9]+/gi, '-')}`);
  const groupId = ids[0] ?? o.idPrefix;
  const error = errorOf(o.errors ?? [], groupId);
  return html`<div class="field${error ? ' field--error' : ''}">
<fieldset class="fieldset"${attrs({ 'aria-describedby': describedBy(o.idPrefix, o.hint, error) })}>
<legend class="legend">${o.legend}</legend>
${o.hint && html`<p class="hint" id="${o.idPrefix}-hint">${o.hint}</p>`}
${fieldError(o.idPrefix, error)}
<div class="choices${o.inline ? ' choices--inline' : ''}">${o.items.map(
    (item, i) => html`<div class="choice">
<input class="choice__input"${attrs({
      id: ids[i],
      name: o.name,
      type: o.kind,
      value: item.value,
      checked: item.checked,
      'aria-describedby': item.hint ? `${ids[i]}-hint` : undefined,
    })}>
<label class="choice__label" for="${ids[i]}">${item.label}</label>
${item.hint && html`<p class="hint choice__hint" id="${ids[i]}-hint">${item.hint}</p>`}
</div>`,
  )}</div>
</fieldset>
</div>`;
}

/** A value shown once with a button that copies it (the button appears only where script runs). */
export function copyable(o: {
  id: string;
  label: string;
  value: string;
  /** Take the focus on load (the page exists to hand this value over), with or without script. */
  autofocus?: boolean;
}): SafeHtml {
  return html`<div class="field">
<label class="label" for="${o.id}">${o.label}</label>
<div class="copyable">
<input class="input input--code"${attrs({ id: o.id, type: 'text', value: o.value, readonly: true, spellcheck: 'false', autocomplete: 'off', autofocus: o.autofocus })}>
<button type="button" class="button button--secondary" data-copy="${o.id}" hidden>Copy</button>
</div>
</div>`;
}
