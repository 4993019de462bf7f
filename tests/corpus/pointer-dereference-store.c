// expect: ok
// options: --size N=8
// A 1-d array dereferenced is its first element (frontend/c/views.py): no longer refused.
void f(int N, double A[N], double B[N]) {
  *B = A[0];
}
