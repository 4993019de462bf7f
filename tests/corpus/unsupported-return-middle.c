// expect: 4:3 return
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  return;
  B[0] = A[0];
}
