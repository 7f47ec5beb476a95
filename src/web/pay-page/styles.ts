/** The page's whole stylesheet, inlined under the response's CSP nonce (no external resources). */
export const CSS = `
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;min-height:100vh;background:#eef1f6;color:#111827;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;overflow-wrap:anywhere}
a{color:#1d4ed8}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px;border-radius:6px}
.test{background:#fde68a;color:#78350f;text-align:center;font-size:14px;font-weight:600;padding:6px 12px}
.sheet{max-width:440px;margin:24px auto;background:#fff;border-radius:16px;box-shadow:0 1px 2px rgba(16,24,40,.06),0 8px 24px rgba(16,24,40,.08);overflow:hidden}
.head{padding:20px 24px 16px;border-bottom:1px solid #e5e7eb}
.shop{margin:0;font-size:14px;color:#4b5563;font-weight:600}
.head h1{margin:2px 0 0;font-size:15px;font-weight:500;color:#4b5563}
.amount{margin:6px 0 0;font-size:clamp(22px,7.5vw,32px);font-weight:700;letter-spacing:-.01em;line-height:1.2}
.meta{margin:6px 0 0;font-size:13px;color:#6b7280}
.body{padding:20px 24px 24px}
h2{margin:0 0 12px;font-size:20px;line-height:1.3}
p{margin:0 0 12px}
.muted{color:#6b7280;font-size:14px}
.btn{display:flex;align-items:center;justify-content:center;gap:8px;width:100%;min-height:48px;padding:12px 16px;border:1px solid transparent;border-radius:10px;font:inherit;font-weight:600;text-decoration:none;cursor:pointer;background:#1d4ed8;color:#fff}
.btn:hover{background:#1e40af}
.btn.secondary{background:#fff;color:#1d4ed8;border-color:#c7d2fe}
.btn.secondary:hover{background:#eef2ff}
.btn.danger{background:#fff;color:#b91c1c;border-color:#fecaca}
.btn.danger:hover{background:#fef2f2}
.btn.quiet{background:transparent;border-color:transparent;color:#4b5563;font-weight:500;text-decoration:underline;text-underline-offset:3px}
.btn.quiet:hover{background:#f9fafb;color:#b91c1c}
.stack .quiet{margin-top:6px}
.stack{display:grid;gap:10px;margin-top:16px}
.methods{list-style:none;margin:0;padding:0;display:grid;gap:10px}
.method{display:flex;align-items:center;gap:14px;width:100%;padding:14px 16px;border:1px solid #d1d5db;border-radius:12px;background:#fff;font:inherit;color:inherit;text-align:left;cursor:pointer}
.method:hover{border-color:#1d4ed8;background:#f8faff}
.method svg,.chosen svg{flex:none}
.method b,.chosen b{display:block}
.method small,.chosen small{display:block;color:#6b7280;font-size:13px}
.method .chev{margin-left:auto;color:#9ca3af}
.chosen{display:flex;align-items:center;gap:14px;margin:0 0 16px;padding:14px 16px;border:1px solid #d1d5db;border-radius:12px}
.desc{margin:6px 0 0;font-size:15px;color:#111827}
.qr{display:block;width:100%;max-width:232px;height:auto;margin:8px auto 16px;padding:8px;border:1px solid #e5e7eb;border-radius:12px}
.field{margin-bottom:14px}
.field label{display:block;font-weight:600;font-size:14px;margin-bottom:4px}
.field input{display:block;width:100%;min-height:48px;padding:10px 12px;border:1px solid #9ca3af;border-radius:10px;font:inherit;font-size:17px;background:#fff;color:inherit}
.field input:focus-visible{outline:3px solid #f59e0b;outline-offset:1px;border-color:#1d4ed8}
.field input[aria-invalid=true]{border-color:#b91c1c;background:#fff7f7}
.row{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.hint{display:block;color:#6b7280;font-size:13px;margin-top:4px}
.err{color:#b91c1c;font-size:14px;margin:4px 0 0}
.err:empty{display:none}
.alert{border:1px solid #fecaca;background:#fef2f2;color:#991b1b;border-radius:10px;padding:10px 12px;margin-bottom:14px}
.panel{margin-top:20px;border:1px dashed #f59e0b;background:#fffbeb;border-radius:12px;padding:14px 16px}
.panel h3{margin:0 0 6px;font-size:15px;color:#92400e}
.panel p{font-size:14px}
.cards{list-style:none;margin:8px 0 0;padding:0;display:grid;gap:6px}
.cards button{display:flex;flex-wrap:wrap;align-items:baseline;justify-content:space-between;gap:2px 12px;width:100%;padding:8px 10px;border:1px solid #fcd34d;border-radius:8px;background:#fff;font:inherit;font-size:14px;text-align:left;cursor:pointer;color:inherit}
.cards button:hover{background:#fef3c7}
.cards span{font-size:13px;color:#92400e}
.cards code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.status{text-align:center;padding-top:8px}
.status svg{display:block;margin:0 auto 12px}
.status h2{font-size:22px}
.spinner{width:48px;height:48px;margin:8px auto 16px;border:4px solid #dbeafe;border-top-color:#1d4ed8;border-radius:50%;animation:spin 1s linear infinite}
@keyframes spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.spinner{animation-duration:3s}}
.kv{margin:16px 0 0;padding:12px 14px;background:#f9fafb;border-radius:10px;font-size:14px;text-align:left}
.kv div{display:flex;justify-content:space-between;gap:12px}
.kv div+div{margin-top:6px}
.kv dt{color:#6b7280}
.kv dd{margin:0;font-weight:600;text-align:right}
.foot{max-width:440px;margin:0 auto 24px;padding:0 16px;display:flex;justify-content:space-between;align-items:center;gap:12px;color:#6b7280;font-size:13px}
.foot span{display:inline-flex;align-items:center;gap:6px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:480px){.sheet{margin:0;border-radius:0;box-shadow:none;min-height:calc(100vh - 48px)}.head,.body{padding-left:16px;padding-right:16px}.foot{margin-top:12px}}
`;
