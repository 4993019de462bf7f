// expect: 5:3 return
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
  return 1;
}
