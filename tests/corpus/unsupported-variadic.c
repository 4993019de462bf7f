// expect: 3:28 variadic
// options: --size N=8
void f(int N, double A[N], ...) {
  A[0] = 1.0;
}
